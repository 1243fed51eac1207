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
import org.apache.spark.storage.{BlockId, BlockManagerId, FallbackStorage}
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, PeerQueue, SendRule, SourceRate, TaskShare, InFlightLedger}
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.transport.{HostLocalTransport, TransportListener}

/**
 * Streams the shuffle blocks of one reduce task, one `(blockId, stream)` per block, in the order
 * they become available.
 *
 * What the task reads is a list of [[FetchItem]]s per source: blocks of map outputs, and requests
 * that stand for several blocks, all sent and counted alike; each, when it arrives or fails,
 * says what it makes ready and what to request in its place. Ready blocks go before any other.
 * Items of this executor (and of the fallback storage) are read straight from its block manager.
 * Those of other executors are requested through the transport (which reads those on
 * this host from their files, see [[HostLocalTransport]]) in the order and at the pace a
 * [[FetchScheduler]] decides
 * (`spark.shuffle.adaptive.fetch.order`), within Spark's reducer limits and the task's
 * `elastic` limit (see [[FlowSettings.elasticLimit]]), kept in its [[InFlightLedger]]. A block
 * counts as in flight from its request until the task takes it, so the limit bounds what is
 * buffered too (only a request sent with nothing in flight may pass it).
 * Arrived remote items are served before local ones, to free their memory first; the task only
 * blocks (fetch wait time) when neither is ready. Each wait feeds the elastic limit and, per
 * source, the executor-wide [[PeerTraffic]] that adaptive source selection reads.
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
  private[this] val traffic = executor.traffic
  private[this] val results = new LinkedBlockingDeque[FetchResult]
  private[this] val localQueue = mutable.Queue.empty[FetchItem]
  private[this] val ready = mutable.Queue.empty[ReadyBlock]

  /** What this task has yet to ask of each source, which the executor's estimates include. */
  private[this] val pendingShare = new TaskShare(traffic.addPending)
  private[this] val corruption = new BlockCorruption(settings, transport)

  /** Blocks deferred by the direct-memory back-off, asked for again before any other. */
  private[this] val deferred = mutable.LinkedHashMap.empty[BlockManagerId, PeerQueue[FetchItem]]
  private[this] val transportFallbacks = new AtomicLong
  private[this] val openStreams = mutable.LinkedHashSet.empty[BlockInputStream]
  private[this] val ledger =
    new InFlightLedger(traffic, elastic.current, executor.budget.map(_.join()))

  /** Blocks of requests sent to disk, which hold none of the executor's fetch budget. */
  private[this] val toDisk = mutable.HashSet.empty[BlockId]
  private[this] val startNanos = clock.nanoTime()
  private[this] var integratedUntil = startNanos

  /** Items requested that have neither arrived nor failed yet. */
  private[this] var itemsLeft = 0
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
    val remote = mutable.ArrayBuffer.empty[(BlockManagerId, IndexedSeq[FetchItem])]
    // Spark reads what decommissioned executors left in the fallback storage as local blocks.
    val localIds =
      Set(local.address.executorId, FallbackStorage.FALLBACK_BLOCK_MANAGER_ID.executorId)
    task.requests.foreach { case (address, items) =>
      itemsLeft += items.size
      if (items.nonEmpty)
        counters.label(FetchCounters.HostBySource, address.executorId, address.host)
      if (localIds(address.executorId)) {
        localQueue ++= items
      } else if (items.nonEmpty) {
        remote += address -> items
        pendingShare.change(address.executorId, items.iterator.map(_.size).sum)
      }
    }
    counters.add(FetchCounters.ReduceTasks, 1)
    logDebug(
      s"Fetching $itemsLeft items: ${localQueue.size} local, the rest from ${remote.size} " +
        s"executors in ${settings.order} order")
    FetchScheduler(settings, local.address, remote.toSeq, traffic, clock)
  }

  override def hasNext: Boolean = itemsLeft > 0 || ready.nonEmpty

  override def next(): (BlockId, InputStream) = {
    if (!hasNext) throw new NoSuchElementException("all shuffle blocks were served")
    var opened: Option[(BlockId, InputStream)] = None
    while (opened.isEmpty) {
      sendRequests()
      // Nothing is sent between an item's arrival and the task taking what it made ready.
      if (ready.isEmpty)
        Option(results.pollFirst()) match {
          case Some(result) => resolveRemote(result, waitMs = 0.0)
          case None if localQueue.nonEmpty =>
            observeWait(0.0)
            resolveLocal(localQueue.dequeue())
          case None =>
            val (result, waitMs) = awaitResult()
            resolveRemote(result, waitMs)
        }
      if (ready.nonEmpty) opened = openStream(ready.dequeue())
    }
    opened.get
  }

  /** Blocks for the next remote result; returns it with the wait in (fractional) ms. */
  private def awaitResult(): (FetchResult, Double) = {
    if (ledger.requestsInFlight == 0) {
      throw new IllegalStateException(
        s"Shuffle fetcher has no request in flight but $itemsLeft items to serve")
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

  private def send(request: BlockBatch[FetchItem]): Unit = {
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
    def named(id: BlockId) = byId.get(id).fold(s"$id from $address")(_.name(address))
    val start = clock.nanoTime()
    val rate = traffic.rate(address.executorId)
    // Started under the lock that cleanup ends outstanding requests under, so none is missed.
    val requestId = synchronized {
      rate.requestStarted(start)
      requestsSent += 1
      outstanding(requestsSent) = rate
      requestsSent
    }

    def deliver(id: BlockId, bytes: Long, make: (FetchItem, Boolean, Long) => FetchResult): Unit =
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
          (item, done, millis) => {
            // The transport releases its reference when this callback returns.
            buf.retain()
            FetchResult.Fetched(item, address, buf, via, done, millis)
          })

      override def onFailed(id: BlockId, e: Throwable): Unit = {
        logWarning(s"Failed to fetch ${named(id)}", e)
        deliver(
          id,
          0L,
          (item, done, _) =>
            e match {
              case _: OutOfDirectMemoryError if mayRetryAfterDirectMemoryFailure(id) =>
                FetchResult.Deferred(item, address, done)
              case _ => FetchResult.Failed(item, address, done, e)
            })
      }

      override def onFellBack(id: BlockId, e: Throwable): Unit = {
        transportFallbacks.incrementAndGet()
        logWarning(
          s"Cannot read ${named(id)} the way ${transport.pathTo(address)} " +
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

  /** What `result`, the transport's answer for one item, makes ready or asks for instead. */
  private def resolveRemote(result: FetchResult, waitMs: Double): Unit = {
    val address = result.address
    integrate()
    ledger.returned(
      address,
      result.item.size,
      result.requestDone,
      inMemory = !toDisk.remove(result.item.blockId))
    result match {
      case FetchResult.Failed(item, _, _, cause) =>
        val why = cause match {
          case _: OutOfDirectMemoryError =>
            s"out of Netty direct memory ${settings.maxAttemptsOnNettyOOM + 1} times"
          case _ => cause.getMessage
        }
        resolved(item.failed(address, s"Failed to fetch ${item.name(address)}: $why", cause))
      case FetchResult.Deferred(item, _, _) =>
        deferred.getOrElseUpdate(address, new PeerQueue(address, Nil)) += item
        counters.add(FetchCounters.DirectMemoryDeferrals, 1)
      case FetchResult.Fetched(item, _, buf, via, done, millis) =>
        if (done) {
          if (via != HostLocalTransport.Name) readMetrics.incRemoteReqsDuration(millis)
          backoff.liftIfFree(settings.maxReqSizeShuffleToMem)
        }
        counters.add(FetchCounters.WaitMsBySource, address.executorId, waitMs)
        traffic.recordWait(address.executorId, waitMs)
        observeWait(waitMs)
        arrived(item, address, buf, via)
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
      blocks: Int,
      bytes: Long): Unit = {
    countFetched(buf, via, blocks, bytes)
    counters.served(source.executorId, via, bytes)
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

  private def resolveLocal(item: FetchItem): Unit = {
    val buf =
      try local.read(item.blockId)
      catch {
        case NonFatal(e) =>
          resolved(
            item.failed(
              local.address,
              s"Failed to read local ${item.name(local.address)}: ${e.getMessage}",
              e))
          return
      }
    arrived(item, local.address, buf, FetchCounters.Local)
  }

  /**
   * `item` arrived: what it counts as read, the blocks it made ready (served from the next turn
   * on, before any other) and what it names in its place, requested.
   */
  private def arrived(
      item: FetchItem,
      address: BlockManagerId,
      buf: ManagedBuffer,
      via: String): Unit = {
    val arrival = item.arrived(address, buf, via)
    if (arrival.blocks > 0) countRead(address, via, buf, arrival.blocks, arrival.bytes)
    ready ++= arrival.ready
    resolved(arrival.instead)
  }

  /** An item resolved, with what to request in its place, from wherever it is. */
  private def resolved(instead: Seq[FetchItem.At]): Unit = {
    itemsLeft -= 1
    request(instead)
  }

  private def request(items: Seq[FetchItem.At]): Unit = {
    itemsLeft += items.size
    items.foreach { case (home, item) =>
      if (home == local.address) localQueue += item
      else deferred.getOrElseUpdate(home, new PeerQueue(home, Nil)) += item
    }
  }

  /** None when the block was found corrupt and something was requested in its place. */
  private def openStream(ready: ReadyBlock): Option[(BlockId, InputStream)] = {
    val ReadyBlock(id, block, address, buf, readAgain, onlyCopy, named, opened) = ready
    def name = named()
    if (buf.size == 0) {
      buf.release()
      throw block.fetchFailed(
        address,
        s"Received a zero-size buffer for $name from $address " +
          s"(map output said ${block.size} bytes)",
        new IOException("zero-size buffer"))
    }
    val in =
      try buf.createInputStream()
      catch {
        case e: IOException =>
          buf.release()
          throw block.fetchFailed(address, s"Cannot open $name: ${e.getMessage}", e)
      }
    // What is the only copy of what it holds is not one of the serving executor's blocks, which
    // a diagnosis would compare it with.
    def diagnosis(e: IOException): String =
      if (onlyCopy) s"$name is corrupt, and the only copy of what it holds: ${e.getMessage}"
      else corruption.diagnose(block.blockId, address, buf, e)
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
      case e: IOException if readAgain.nonEmpty && corruption.fetchAgain(block.blockId) =>
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
        throw block.fetchFailed(address, message, e)
    }
  }

  private def readFailure(block: BlockRef, address: BlockManagerId, e: IOException)(
      message: => String): Throwable =
    if (corruption.failsFetch(e, context.isInterrupted())) block.fetchFailed(address, message, e)
    else e

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
    ready.foreach(_.buf.release())
    ready.clear()
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
