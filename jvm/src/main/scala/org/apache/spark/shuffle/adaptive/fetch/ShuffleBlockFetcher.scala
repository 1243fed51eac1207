package org.apache.spark.shuffle.adaptive.fetch

import java.io.{IOException, InputStream}
import java.util.concurrent.LinkedBlockingDeque
import java.util.concurrent.TimeUnit.NANOSECONDS
import java.util.concurrent.atomic.AtomicLong

import scala.collection.mutable
import scala.util.control.NonFatal

import io.netty.util.internal.OutOfDirectMemoryError

import org.apache.spark.TaskContext
import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.{FileSegmentManagedBuffer, ManagedBuffer}
import org.apache.spark.network.shuffle.{DownloadFile, DownloadFileManager, SimpleDownloadFile}
import org.apache.spark.network.util.TransportConf
import org.apache.spark.shuffle.ShuffleReadMetricsReporter
import org.apache.spark.storage.{BlockId, BlockManagerId, FallbackStorage, ShuffleBlockBatchId, ShuffleBlockId}
import org.apache.spark.util.{Clock, SystemClock}
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, ElasticLimit, FlowSettings, InFlightLedger, PeerQueue, PeerTraffic, SendRule, SourceRate, TaskShare}
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage
import org.apache.spark.shuffle.adaptive.transport.{BlockRef, BlockTransport, HostLocalTransport, TransportListener}

/**
 * Streams the shuffle blocks of one reduce task, one `(blockId, stream)` per block, in the order
 * they become available.
 *
 * Local blocks (and those of the fallback storage) are read straight from this executor's shuffle
 * files. Blocks of other executors are requested through the transport (which reads those on
 * this host from their files, see [[HostLocalTransport]]) in the order and at the pace a
 * [[FetchScheduler]] decides
 * (`spark.shuffle.adaptive.fetch.order`), within Spark's reducer limits and the task's
 * `elastic` limit (see [[FlowSettings.elasticLimit]]), kept in its [[InFlightLedger]]. A block
 * counts as in flight from its request until the task takes it, so the limit bounds what is
 * buffered too (only a request sent with nothing in flight may pass it).
 * Arrived remote blocks are served before local ones, to free their memory first; the task only
 * blocks (fetch wait time) when neither is ready. Each wait feeds the elastic limit and, per
 * source, the executor-wide [[PeerTraffic]] that adaptive source selection reads. With
 * `batch` (see [[BatchFetch]]) each map's blocks are asked for as one batch block. Requests that
 * stand for several blocks ([[CompositeRequests]]) are sent like any other and handed over when
 * they come back: the blocks they make ready go before any other, and the blocks they name in
 * their place are requested as the task's own.
 *
 * Failures: a block that cannot be fetched or read raises FetchFailedException, so Spark reruns
 * the map stage. A remote block found corrupt when its stream is opened is fetched once more;
 * corrupt twice, or corrupt while being read, it fails, with the checksum diagnosis in the
 * message when shuffle checksums are on. A block refused for want of Netty direct memory is
 * deferred under the executor's [[DirectMemoryBackoff]] and asked for again, up to
 * `spark.shuffle.maxAttemptsOnNettyOOM` times.
 *
 * Threads: the task thread runs everything except the transport's callbacks, which only append to
 * `results` under this object's lock.
 */
private[spark] final class ShuffleBlockFetcher(
    context: TaskContext,
    executor: ExecutorFetch,
    task: TaskFetch,
    readMetrics: ShuffleReadMetricsReporter,
    counters: FetchCounters)
    extends Iterator[(BlockId, InputStream)]
    with DownloadFileManager
    with Logging {

  private[this] val transport = task.transport
  private[this] val local = executor.local
  private[this] val settings = executor.settings
  private[this] val elastic = task.elastic
  private[this] val clock = executor.clock
  private[this] val backoff = executor.backoff
  private[this] val composite = task.composite
  private[this] val traffic = executor.traffic
  private[this] val results = new LinkedBlockingDeque[FetchResult]
  private[this] val localQueue = mutable.Queue.empty[BlockRef]

  /** What this task has yet to ask of each source, which the executor's estimates include. */
  private[this] val pendingShare = new TaskShare(traffic.addPending)
  private[this] val corruption = new BlockCorruption(settings, transport)

  /** Blocks deferred by the direct-memory back-off, asked for again before any other. */
  private[this] val deferred = mutable.LinkedHashMap.empty[BlockManagerId, PeerQueue]
  private[this] val transportFallbacks = new AtomicLong
  private[this] val openStreams = mutable.LinkedHashSet.empty[BlockInputStream]
  private[this] val ledger =
    new InFlightLedger(traffic, elastic.current, executor.budget.map(_.join()))

  /** Blocks of requests sent to disk, which hold none of the executor's fetch budget. */
  private[this] val toDisk = mutable.HashSet.empty[BlockId]
  private[this] val startNanos = clock.nanoTime()
  private[this] var integratedUntil = startNanos

  /** Blocks of map outputs (no composite request) requested and not served yet. */
  private[this] var blocksLeft = 0
  private[this] val scheduler: FetchScheduler = plan()

  // Guarded by `this`: set once the task is done with the fetcher; late callbacks are dropped.
  private[this] var zombie = false
  private[this] val tempFiles = mutable.ArrayBuffer.empty[DownloadFile]

  /** The rates of sources with a request of this task outstanding, by request; under `this`. */
  private[this] val outstanding = mutable.HashMap.empty[Long, SourceRate]
  private[this] var requestsSent = 0L
  private[this] val directMemoryFailures = mutable.HashMap.empty[BlockId, Int]

  context.addTaskCompletionListener[Unit](_ => cleanup())
  sendRequests()

  private def plan(): FetchScheduler = {
    val remote = mutable.ArrayBuffer.empty[(BlockManagerId, IndexedSeq[BlockRef])]
    // Spark reads what decommissioned executors left in the fallback storage as local blocks.
    val localIds =
      Set(local.address.executorId, FallbackStorage.FALLBACK_BLOCK_MANAGER_ID.executorId)
    task.byAddress.foreach { case (address, infos) =>
      // Empty blocks hold no records and are never served, so they are not fetched.
      val nonEmpty = infos.iterator.collect {
        case (id, size, mapIndex) if size > 0 || composite.contains(address, id) =>
          BlockRef(id, size, mapIndex)
      }.toIndexedSeq
      val (composites, blocks) = nonEmpty.partition(ref => composite.contains(address, ref.blockId))
      val refs = composites ++
        (if (task.batch) BatchFetch.merge(blocks, acrossGaps = composite.batchesSpanGaps)
         else blocks)
      blocksLeft += refs.size - composites.size
      if (refs.nonEmpty)
        counters.label(FetchCounters.HostBySource, address.executorId, address.host)
      if (localIds(address.executorId)) {
        localQueue ++= refs
      } else if (refs.nonEmpty) {
        remote += address -> refs
        pendingShare.change(address.executorId, refs.iterator.map(_.size).sum)
      }
    }
    counters.add(FetchCounters.ReduceTasks, 1)
    logDebug(
      s"Fetching $blocksLeft blocks and ${composite.left} composite requests: ${localQueue.size} local, the rest from " +
        s"${remote.size} executors in ${settings.order} order")
    FetchScheduler(settings, local.address, remote.toSeq, traffic, clock)
  }

  override def hasNext: Boolean = blocksLeft > 0 || composite.left > 0

  override def next(): (BlockId, InputStream) = {
    if (!hasNext) throw new NoSuchElementException("all shuffle blocks were served")
    var opened: Option[(BlockId, InputStream)] = None
    while (opened.isEmpty) {
      sendRequests()
      opened = composite.nextReady() match {
        case Some(ready) => openStream(ready, remote = true)
        case None =>
          Option(results.pollFirst()) match {
            case Some(result) => openRemote(result, waitMs = 0.0)
            case None if localQueue.nonEmpty =>
              observeWait(0.0)
              openLocal(localQueue.dequeue())
            case None =>
              val (result, waitMs) = awaitResult()
              openRemote(result, waitMs)
          }
      }
    }
    opened.get
  }

  /** Blocks for the next remote result; returns it with the wait in (fractional) ms. */
  private def awaitResult(): (FetchResult, Double) = {
    if (ledger.requestsInFlight == 0) {
      throw new IllegalStateException(
        s"Shuffle fetcher has no request in flight but $blocksLeft blocks and " +
          s"${composite.left} composite requests to serve")
    }
    val start = clock.nanoTime()
    val result = results.takeFirst()
    val waitNanos = clock.nanoTime() - start
    readMetrics.incFetchWaitTime(NANOSECONDS.toMillis(waitNanos))
    counters.add(FetchCounters.FetchWaitMs, NANOSECONDS.toMillis(waitNanos))
    (result, waitNanos / 1e6)
  }

  private def sendRequests(): Unit = {
    if (backoff.active) {
      // Replies still due free direct memory; with none due, waiting frees nothing.
      if (ledger.requestsInFlight > 0) return
      backoff.lift()
    }
    sendDeferred()
    if (deferred.isEmpty) {
      var request = scheduler.next(ledger)
      while (request.isDefined) {
        pendingShare.change(request.get.address.executorId, -request.get.size)
        send(request.get)
        request = scheduler.next(ledger)
      }
    }
  }

  private def sendDeferred(): Unit = deferred.toList.foreach { case (address, queue) =>
    var allowed = SendRule.blocksAllowed(settings, ledger, address)
    while (queue.nonEmpty && allowed > 0 &&
      SendRule.fits(settings, ledger, queue.peek(settings.requestSize, allowed))) {
      send(queue.take(settings.requestSize, allowed))
      allowed = SendRule.blocksAllowed(settings, ledger, address)
    }
    if (!queue.nonEmpty) deferred -= address
  }

  /** Integrates the buffered bytes and the limit over the time since the last change. */
  private def integrate(): Unit = {
    val now = clock.nanoTime()
    val millis = (now - integratedUntil) / 1e6
    counters.add(FetchCounters.BufferedByteMs, ledger.bytesInFlight * millis)
    counters.add(FetchCounters.LimitByteMs, elastic.current * millis)
    integratedUntil = now
  }

  private def observeWait(millis: Double): Unit = {
    integrate()
    elastic.observeWait(millis)
  }

  private def send(request: BlockBatch): Unit = {
    val address = request.address
    integrate()
    // A request sent with nothing else in flight may not fit the budget: its blocks go to disk.
    val downloads =
      if (request.size > settings.maxReqSizeShuffleToMem || !ledger.fitsBudget(request.size)) {
        Some(this)
      } else None
    if (downloads.isDefined) {
      toDisk ++= request.blocks.map(_.blockId)
      counters.add(FetchCounters.RequestsToDisk, 1)
    }
    ledger.sent(address, request.blocks.size, request.size, inMemory = downloads.isEmpty)
    counters.observe(FetchCounters.PeakBytesInFlight, ledger.bytesInFlight)
    counters.requested(transport.pathTo(address))
    val byId = request.blocks.iterator.map(b => b.blockId -> b).toMap
    val remaining = mutable.HashSet.empty[BlockId] ++= byId.keys
    val start = clock.nanoTime()
    val rate = traffic.rate(address.executorId)
    // Started under the lock that cleanup ends outstanding requests under, so none is missed.
    val requestId = synchronized {
      rate.requestStarted(start)
      requestsSent += 1
      outstanding(requestsSent) = rate
      requestsSent
    }

    def deliver(id: BlockId, bytes: Long, make: (BlockRef, Boolean, Long) => FetchResult): Unit =
      ShuffleBlockFetcher.this.synchronized {
        if (!zombie && remaining.remove(id)) {
          val done = remaining.isEmpty
          val now = clock.nanoTime()
          rate.delivered(now, bytes)
          if (done) {
            rate.requestEnded(now)
            outstanding -= requestId
          }
          val millis = if (done) NANOSECONDS.toMillis(now - start) else 0L
          make(byId(id), done, millis) match {
            case failed: FetchResult.Failed => results.putFirst(failed)
            case other => results.putLast(other)
          }
        }
      }

    val listener = new TransportListener {
      override def onFetched(id: BlockId, buf: ManagedBuffer, via: String): Unit =
        deliver(
          id,
          buf.size,
          (block, done, millis) => {
            // The transport releases its reference when this callback returns.
            buf.retain()
            FetchResult.Fetched(block, address, buf, via, done, millis)
          })

      override def onFailed(id: BlockId, e: Throwable): Unit = {
        logWarning(s"Failed to fetch block ${BlockMessage.describe(id)} from $address", e)
        deliver(
          id,
          0L,
          (block, done, _) =>
            e match {
              case _: OutOfDirectMemoryError if mayRetryAfterDirectMemoryFailure(id) =>
                FetchResult.Deferred(block, address, done)
              case _ => FetchResult.Failed(block, address, done, e)
            })
      }

      override def onFellBack(id: BlockId, e: Throwable): Unit = {
        transportFallbacks.incrementAndGet()
        logWarning(
          s"Cannot read block ${BlockMessage.describe(id)} of $address the way ${transport.pathTo(address)} " +
            "reads; fetching it through the next transport instead",
          e)
      }
    }
    try {
      transport.fetch(address, request.blocks.map(_.blockId), listener, downloads)
    } catch {
      case NonFatal(e) => byId.keys.foreach(listener.onFailed(_, e))
    }
  }

  /** Called under this object's lock. */
  private def mayRetryAfterDirectMemoryFailure(id: BlockId): Boolean = {
    val failures = directMemoryFailures.getOrElse(id, 0)
    val retry = failures < settings.maxAttemptsOnNettyOOM
    if (retry) {
      directMemoryFailures(id) = failures + 1
      backoff.engage()
    }
    retry
  }

  /** None when the block was deferred, or found corrupt and asked for again. */
  private def openRemote(result: FetchResult, waitMs: Double): Option[(BlockId, InputStream)] = {
    val address = result.address
    integrate()
    ledger.returned(
      address,
      result.block.size,
      result.requestDone,
      inMemory = !toDisk.remove(result.block.blockId))
    result match {
      case FetchResult.Failed(block, _, _, cause) if composite.contains(address, block.blockId) =>
        request(composite.failed(address, block, cause))
        None
      case FetchResult.Failed(block, _, _, cause) =>
        val why = cause match {
          case _: OutOfDirectMemoryError =>
            s"out of Netty direct memory ${settings.maxAttemptsOnNettyOOM + 1} times"
          case _ => cause.getMessage
        }
        throw fetchFailed(
          block,
          address,
          cause,
          s"Failed to fetch ${block.blockId} from $address: $why")
      case FetchResult.Deferred(block, _, _) =>
        deferred.getOrElseUpdate(address, new PeerQueue(address, Nil)) += block
        counters.add(FetchCounters.DirectMemoryDeferrals, 1)
        None
      case FetchResult.Fetched(block, _, buf, via, done, millis) =>
        if (done) {
          if (via != HostLocalTransport.Name) readMetrics.incRemoteReqsDuration(millis)
          backoff.liftIfFree(settings.maxReqSizeShuffleToMem)
        }
        counters.add(FetchCounters.WaitMsBySource, address.executorId, waitMs)
        traffic.recordWait(address.executorId, waitMs)
        observeWait(waitMs)
        if (composite.contains(address, block.blockId)) arrived(block, address, buf, via)
        else {
          countRead(address, via, buf)
          openBlock(block, address, buf, remote = true)
        }
    }
  }

  /**
   * Spark's read metrics (which count what was read from this host's files as local) and the
   * plugin's counters of what was served: `blocks` and `bytes` of `buf` from `source` by `via`.
   */
  private def countRead(
      source: BlockManagerId,
      via: String,
      buf: ManagedBuffer,
      blocks: Int = 1,
      bytes: Option[Long] = None): Unit = {
    val read = bytes.getOrElse(buf.size)
    countFetched(buf, via, blocks, read)
    counters.served(source.executorId, via, read)
  }

  private def countFetched(buf: ManagedBuffer, via: String, blocks: Int, bytes: Long): Unit =
    if (via == HostLocalTransport.Name || via == FetchCounters.Local) {
      readMetrics.incLocalBlocksFetched(blocks)
      readMetrics.incLocalBytesRead(bytes)
    } else {
      readMetrics.incRemoteBlocksFetched(blocks)
      readMetrics.incRemoteBytesRead(bytes)
      if (buf.isInstanceOf[FileSegmentManagedBuffer]) readMetrics.incRemoteBytesReadToDisk(bytes)
    }

  private def openLocal(block: BlockRef): Option[(BlockId, InputStream)] = {
    val buf =
      try local.read(block.blockId)
      catch {
        // As a composite request from a peer that failed: what it stood for is read instead.
        case NonFatal(e) if composite.contains(local.address, block.blockId) =>
          request(composite.failed(local.address, block, e))
          return None
        case NonFatal(e) =>
          throw fetchFailed(
            block,
            local.address,
            e,
            s"Failed to read local block ${block.blockId}: ${e.getMessage}")
      }
    buf.retain()
    if (composite.contains(local.address, block.blockId)) {
      arrived(block, local.address, buf, FetchCounters.Local)
    } else {
      countRead(local.address, FetchCounters.Local, buf)
      openBlock(block, local.address, buf, remote = false)
    }
  }

  /**
   * A composite request arrived: what it counts as read, and what it names in its place
   * requested; the blocks it made ready go first, from the next turn on.
   */
  private def arrived(
      sent: BlockRef,
      address: BlockManagerId,
      buf: ManagedBuffer,
      via: String): Option[(BlockId, InputStream)] = {
    val arrival = composite.arrived(address, sent, buf, via)
    if (arrival.blocks > 0) countRead(address, via, buf, arrival.blocks, Some(arrival.bytes))
    request(arrival.instead)
    None
  }

  /** Blocks of map outputs to serve, from wherever they are. */
  private def request(blocks: Seq[(BlockManagerId, BlockRef)]): Unit = {
    blocksLeft += blocks.size
    blocks.foreach { case (home, block) =>
      if (home == local.address) localQueue += block
      else deferred.getOrElseUpdate(home, new PeerQueue(home, Nil)) += block
    }
  }

  /** A block of a map output, served once opened, or once something was requested in its place. */
  private def openBlock(
      block: BlockRef,
      address: BlockManagerId,
      buf: ManagedBuffer,
      remote: Boolean): Option[(BlockId, InputStream)] = {
    val opened = openStream(
      ReadyBlock(
        block.blockId,
        block,
        address,
        buf,
        Seq(address -> block),
        () => block.blockId.name),
      remote)
    blocksLeft -= 1
    opened
  }

  /** None when the block was found corrupt and something was requested in its place. */
  private def openStream(ready: ReadyBlock, remote: Boolean): Option[(BlockId, InputStream)] = {
    val ReadyBlock(id, block, address, buf, readAgain, named, opened) = ready
    def name = named()
    if (buf.size == 0) {
      buf.release()
      throw fetchFailed(
        block,
        address,
        new IOException("zero-size buffer"),
        s"Received a zero-size buffer for $name from $address " +
          s"(map output said ${block.size} bytes)")
    }
    val in =
      try buf.createInputStream()
      catch {
        case e: IOException =>
          buf.release()
          throw fetchFailed(block, address, e, s"Cannot open $name: ${e.getMessage}")
      }
    // What is the only copy of what it holds is not one of the serving executor's blocks, which
    // a diagnosis would compare it with.
    def diagnosis(e: IOException): String =
      if (readAgain.nonEmpty) corruption.diagnose(block.blockId, address, buf, e)
      else s"$name is corrupt, and the only copy of what it holds: ${e.getMessage}"
    try {
      val wrapped = corruption.readHead(in, executor.streamWrapper(block.blockId, in))
      val stream = new BlockInputStream(
        wrapped,
        buf,
        onReadError = e => readFailure(block, address, e)(diagnosis(e)),
        onClose = { closed =>
          openStreams -= closed
          backoff.liftIfFree(settings.maxReqSizeShuffleToMem)
        })
      openStreams += stream
      opened()
      Some((id, stream))
    } catch {
      case e: IOException if readAgain.nonEmpty && corruption.fetchAgain(block.blockId, remote) =>
        logWarning(s"$name from $address is corrupt, reading it again", e)
        closeQuietly(in)
        buf.release()
        counters.add(FetchCounters.CorruptRefetches, 1)
        request(readAgain)
        None
      case e: IOException =>
        val message = diagnosis(e)
        closeQuietly(in)
        buf.release()
        throw fetchFailed(block, address, e, message)
    }
  }

  private def readFailure(block: BlockRef, address: BlockManagerId, e: IOException)(
      message: => String): Throwable =
    if (corruption.failsFetch(e, context.isInterrupted())) fetchFailed(block, address, e, message)
    else e

  private def fetchFailed(
      block: BlockRef,
      address: BlockManagerId,
      cause: Throwable,
      message: String): Throwable = block.blockId match {
    case ShuffleBlockId(shuffleId, mapId, reduceId) =>
      SparkCompat.fetchFailed(address, shuffleId, mapId, block.mapIndex, reduceId, message, cause)
    case ShuffleBlockBatchId(shuffleId, mapId, startReduceId, _) =>
      SparkCompat.fetchFailed(
        address,
        shuffleId,
        mapId,
        block.mapIndex,
        startReduceId,
        message,
        cause)
    case other =>
      new IllegalStateException(s"Not a shuffle block: $other ($message)", cause)
  }

  private def closeQuietly(in: InputStream): Unit =
    try in.close()
    catch { case NonFatal(_) => }

  override def createTempFile(transportConf: TransportConf): DownloadFile =
    // The bytes stay as they came over the wire (encrypted if I/O encryption is on); the stream
    // wrapper decrypts them when the task reads the block.
    new SimpleDownloadFile(local.tempFile(), transportConf)

  override def registerTempFileToClean(file: DownloadFile): Boolean = synchronized {
    if (zombie) false else { tempFiles += file; true }
  }

  /**
   * Releases every buffer and temporary file; runs when the last block was served and again when
   * the task ends, whichever comes first doing the work.
   */
  def cleanup(): Unit = {
    val files = synchronized {
      if (zombie) return
      zombie = true
      // Requests this task no longer waits for stop counting as its sources' busy time.
      val now = clock.nanoTime()
      outstanding.valuesIterator.foreach(_.requestEnded(now))
      outstanding.clear()
      // For the skew report: how fast each source delivered to this executor, as the order saw it.
      counters(FetchCounters.BytesBySource).keysIterator
        .filter(_ != local.address.executorId)
        .foreach { id =>
          traffic.rate(id).bytesPerSecond(now).foreach(counters.rateObserved(id, _))
        }
      tempFiles.toList
    }
    integrate()
    counters.add(FetchCounters.FetchMs, (clock.nanoTime() - startNanos) / 1e6)
    counters.limitObserved(elastic.min, settings.maxBytesInFlight, elastic.changes)
    executor.budget.foreach(b => counters.observe(FetchCounters.ExecutorBudgetPeak, b.peak))
    counters.taskRead(local.address.executorId)
    counters.add(FetchCounters.TransportFallbacks, transportFallbacks.get)
    // What this task requested and will never consume no longer loads its sources.
    ledger.release()
    pendingShare.release()
    openStreams.toList.foreach(s =>
      try s.close()
      catch { case NonFatal(_) => })
    composite.release()
    var result = results.pollFirst()
    while (result != null) {
      result match {
        case fetched: FetchResult.Fetched =>
          // It was fetched, so it counts as read even though no record was used.
          countFetched(fetched.buf, fetched.via, 1, fetched.buf.size)
          fetched.buf.release()
        case _ =>
      }
      result = results.pollFirst()
    }
    files.foreach { file =>
      if (!file.delete()) logWarning(s"Could not delete shuffle fetch temp file ${file.path()}")
    }
  }
}
