package org.apache.spark.shuffle.adaptive.transport.ucx

import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentLinkedQueue, Executors, ScheduledExecutorService, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable
import scala.concurrent.{Await, Promise}
import scala.concurrent.duration.Duration
import scala.util.{Failure, Success, Try}
import scala.util.control.NonFatal

import org.openucx.jucx.{UcxCallback, UcxException}
import org.openucx.jucx.ucp._

import org.apache.spark.internal.Logging
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.UCX_TIMEOUT
import org.apache.spark.util.ThreadUtils

/**
 * This JVM's UCX context and its one worker, driven by one progress thread that alone touches
 * the worker, its endpoints and remote keys; other threads hand it work. One endpoint per remote
 * executor, shared by all tasks of this JVM.
 *
 * The progress thread sleeps in the worker's wait (woken by UCX events or by [[submit]]) when it
 * has nothing to progress, so an idle node costs no CPU. A one-sided read that has not completed
 * after `timeoutMs` is cancelled and fails, as does every read from a peer whose endpoint fails.
 */
private[ucx] final class UcxNode(timeoutMs: Long) extends Logging {

  private[this] val context =
    new UcpContext(new UcpParams().requestRmaFeature().requestWakeupFeature())
  private[this] val worker = context.newWorker(new UcpWorkerParams())

  /** This worker's address, as peers connect to it. */
  val address: Array[Byte] = bytesOf(worker.getAddress)

  // The worker may be signalled from any thread, but not once the progress thread closed it
  // (its native handle is gone: signal throws). Work added after the close would never run.
  private[this] val closing = new Object
  private[this] var closed = false // guarded by `closing`

  private def wake(): Unit = closing.synchronized(if (!closed) worker.signal())

  private[this] val work = new ConcurrentLinkedQueue[Runnable]
  @volatile private[this] var stopped = false
  private[this] val reading = new AtomicInteger

  // Touched by the progress thread only.
  private[this] val endpoints = mutable.HashMap.empty[String, UcpEndpoint]
  private[this] val rkeys = mutable.HashMap.empty[(String, Int, Long), UcpRemoteKey]
  private[this] val pending = mutable.LinkedHashMap.empty[Read, Unit]

  private[this] val progress = new Thread(() => run(), "pyspark-shuffle-ucx-progress")
  progress.setDaemon(true)
  progress.start()

  // Wakes the progress thread while reads are pending, so that timeouts fire without events.
  private[this] val ticker: ScheduledExecutorService =
    ThreadUtils.newDaemonSingleThreadScheduledExecutor("pyspark-shuffle-ucx-timeouts")
  private[this] val tick = math.max(1L, math.min(timeoutMs / 4, 1000L))
  ticker.scheduleWithFixedDelay(
    () => if (reading.get > 0) wake(),
    tick,
    tick,
    TimeUnit.MILLISECONDS)

  /** Runs `op` on the progress thread. */
  def submit(op: => Unit): Unit = closing.synchronized {
    if (stopped || closed) throw new IllegalStateException("the UCX node is stopped")
    work.add(() => op)
    worker.signal()
  }

  /** Runs `op` on the progress thread and returns its result. */
  def call[T](op: => T): T = {
    val result = Promise[T]()
    submit(result.complete(Try(op)))
    Await.result(result.future, Duration(timeoutMs, TimeUnit.MILLISECONDS))
  }

  /** Registers `buffer` (direct) for one-sided reads; its memory stays registered until freed. */
  def register(buffer: ByteBuffer): UcpMemory = call(context.registerMemory(buffer))

  def deregister(memory: UcpMemory): Unit = submit(memory.deregister())

  /** The packed remote key of registered `memory`: what a peer needs to read it. */
  def remoteKey(memory: UcpMemory): Array[Byte] = call(bytesOf(memory.getRemoteKeyBuffer))

  /**
   * Reads `length` bytes at `remoteAddress` of region `(shuffleId, mapId)` of `executorId`
   * (whose worker is at `workerAddress`, region key `rkey`) into `localAddress`, then calls
   * `done` on the progress thread.
   */
  def read(
      executorId: String,
      workerAddress: Array[Byte],
      region: (Int, Long),
      rkey: Array[Byte],
      remoteAddress: Long,
      localAddress: Long,
      length: Long)(done: Try[Unit] => Unit): Unit = {
    reading.incrementAndGet()
    val read = new Read(executorId, System.nanoTime() + timeoutMs * 1000000L, done)
    try submit(startRead(read, workerAddress, region, rkey, remoteAddress, localAddress, length))
    catch { case NonFatal(e) => read.finish(Failure(e)) }
  }

  /** Drops the remote keys of a shuffle's regions, once the shuffle is gone. */
  def forgetShuffle(shuffleId: Int): Unit = submit {
    rkeys.keys.filter(_._2 == shuffleId).toList.foreach(k => rkeys.remove(k).foreach(_.close()))
  }

  def stop(): Unit = if (!stopped) {
    stopped = true
    ticker.shutdownNow()
    wake()
    progress.join(timeoutMs)
  }

  /** A read in progress; it ends only when UCX completes its request, never earlier. */
  private final class Read(val executorId: String, val deadline: Long, done: Try[Unit] => Unit) {
    private[this] var finished = false
    var request: UcpRequest = _

    /** Why this node gave up on the read, which UCX then completes with an error. */
    var abandoned: Option[String] = None

    def finish(outcome: Try[Unit]): Unit = if (!finished) {
      finished = true
      pending -= this
      reading.decrementAndGet()
      try done(outcome)
      catch {
        case NonFatal(e) => logWarning("A UCX read callback failed", e)
      }
    }
  }

  private def startRead(
      read: Read,
      workerAddress: Array[Byte],
      region: (Int, Long),
      rkey: Array[Byte],
      remoteAddress: Long,
      localAddress: Long,
      length: Long): Unit = {
    val executorId = read.executorId
    val (endpoint, key) = try {
      val endpoint = endpoints.getOrElseUpdate(executorId, connect(executorId, workerAddress))
      (
        endpoint,
        rkeys.getOrElseUpdate(
          (executorId, region._1, region._2),
          endpoint.unpackRemoteKey(direct(rkey))))
    } catch {
      case NonFatal(e) =>
        read.finish(Failure(e))
        return
    }
    pending(read) = ()
    read.request = endpoint.getNonBlocking(
      remoteAddress,
      key,
      localAddress,
      length,
      new UcxCallback {
        override def onSuccess(request: UcpRequest): Unit = read.finish(Success(()))
        override def onError(status: Int, message: String): Unit =
          read.finish(
            Failure(new UcxException(s"UCX read of $length bytes from executor " +
              s"$executorId failed: ${read.abandoned.getOrElse(s"$message ($status)")}")))
      })
  }

  /**
   * Peer failure handling where the transports offer it (TCP, RDMA); UCX's shared-memory
   * transports do not, so between executors of one host the endpoint goes without, and a dead
   * peer shows as a failed or timed-out read.
   */
  private def connect(executorId: String, workerAddress: Array[Byte]): UcpEndpoint = {
    def params = new UcpEndpointParams()
      .setUcpAddress(direct(workerAddress))
      .setName(s"executor-$executorId")
      .setErrorHandler((endpoint: UcpEndpoint, status: Int, message: String) =>
        disconnect(executorId, endpoint, s"$message ($status)"))
    try worker.newEndpoint(params.setPeerErrorHandlingMode())
    catch {
      case e: UcxException =>
        logInfo(
          s"Connecting to executor $executorId without peer failure handling " +
            s"(${e.getMessage}): failures show as timeouts")
        worker.newEndpoint(params)
    }
  }

  /**
   * Closes the endpoint to a failed or unresponsive peer. UCX then completes the reads still
   * outstanding on it with errors: only then may their buffers be reused, since until then a
   * late reply could still land in them.
   */
  private def disconnect(executorId: String, endpoint: UcpEndpoint, why: String): Unit = {
    logWarning(s"Closing the UCX endpoint to executor $executorId: $why")
    if (endpoints.get(executorId).exists(_ eq endpoint)) endpoints -= executorId
    rkeys.keys.filter(_._1 == executorId).toList.foreach(k => rkeys.remove(k).foreach(_.close()))
    pending.keys.filter(_.executorId == executorId).foreach { read =>
      if (read.abandoned.isEmpty) read.abandoned = Some(why)
    }
    try endpoint.closeNonBlockingForce()
    catch { case NonFatal(_) => }
  }

  private def expire(): Unit = if (pending.nonEmpty) {
    val now = System.nanoTime()
    pending.keys
      .filter(r => r.abandoned.isEmpty && now - r.deadline > 0)
      .map(_.executorId)
      .toSet
      .foreach { (executorId: String) =>
        endpoints
          .get(executorId)
          .foreach(
            disconnect(
              executorId,
              _,
              s"a read did not complete within $timeoutMs ms (${UCX_TIMEOUT.key})"))
      }
  }

  private def run(): Unit = {
    try {
      while (!stopped) {
        var op = work.poll()
        while (op != null) {
          try op.run()
          catch { case NonFatal(e) => logWarning("UCX operation failed", e) }
          op = work.poll()
        }
        if (worker.progress() == 0) {
          expire()
          if (work.isEmpty && !stopped) worker.waitForEvents()
        }
      }
    } catch {
      case NonFatal(e) => logError("The UCX progress thread failed", e)
    } finally {
      close()
    }
  }

  private def close(): Unit = {
    stopped = true
    closing.synchronized { closed = true }
    pending.keys.toList.foreach(_.finish(Failure(new UcxException("the UCX node stopped"))))
    var op = work.poll()
    while (op != null) {
      try op.run()
      catch { case NonFatal(_) => }
      op = work.poll()
    }
    rkeys.values.foreach(k => Try(k.close()))
    endpoints.values.foreach(e => Try(e.closeNonBlockingForce()))
    Try(worker.close())
    Try(context.close())
  }

  private def direct(bytes: Array[Byte]): ByteBuffer = {
    val buffer = ByteBuffer.allocateDirect(bytes.length)
    buffer.put(bytes).flip()
    buffer
  }

  private def bytesOf(buffer: ByteBuffer): Array[Byte] = {
    val bytes = new Array[Byte](buffer.remaining())
    buffer.duplicate().get(bytes)
    bytes
  }
}
