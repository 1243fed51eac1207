package org.apache.spark.shuffle.adaptive.fetch

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, File, FilterInputStream, IOException, InputStream}
import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentHashMap, CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.{AtomicInteger, AtomicLong}

import scala.collection.mutable

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.TaskContext
import org.apache.spark.shuffle.ShuffleReadMetricsReporter
import org.apache.spark.util.{Clock, SystemClock}
import org.apache.spark.shuffle.adaptive.flow.{ElasticLimit, FetchBudget, FlowSettings, PeerTraffic}
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.read.{BundledRead, ReadPlan}
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, TransportListener}

/**
 * Fakes the fetcher suites share: the local block reader, a transport whose calls the test
 * answers when it wants, reference-counted buffers that catch leaks, failing streams and a
 * clock the test moves.
 */
private[adaptive] object FetcherFakes {

  /**
   * A fetcher with what a test leaves out fresh for this one task: its own executor traffic,
   * no direct-memory limit, a system clock, no bundles, no batches. What it reads is planned as
   * a reduce task's read is ([[ReadPlan.requests]]).
   */
  def newFetcher(
      context: TaskContext,
      transport: BlockTransport,
      local: LocalBlocks,
      blocksByAddress: Iterator[(BlockManagerId, collection.Seq[(BlockId, Long, Int)])],
      streamWrapper: (BlockId, InputStream) => InputStream,
      settings: FlowSettings,
      elastic: ElasticLimit,
      readMetrics: ShuffleReadMetricsReporter,
      counters: FetchCounters = new FetchCounters,
      clock: Clock = new SystemClock,
      shared: PeerTraffic = null,
      batch: Boolean = false,
      backoff: DirectMemoryBackoff = new DirectMemoryBackoff(() => Long.MaxValue),
      bundles: Seq[(BlockManagerId, BundledRead)] = Nil,
      concatenate: Boolean = false,
      budget: Option[FetchBudget] = None): ShuffleBlockFetcher =
    new ShuffleBlockFetcher(
      context,
      ExecutorFetch(
        local,
        settings,
        Option(shared).getOrElse(new PeerTraffic(settings.waitWindow)),
        backoff,
        streamWrapper,
        clock,
        budget),
      TaskFetch(
        transport,
        ReadPlan(
          blocksByAddress.map { case (address, blocks) =>
            address -> blocks.map { case (id, size, mapIndex) =>
              BlockRef(id, size, mapIndex)
            }.toSeq
          }.toSeq,
          bundles = bundles).requests(local.address, batch, concatenate),
        elastic),
      readMetrics,
      counters)

  final case class Blk(id: ShuffleBlockId, bytes: Array[Byte], mapIndex: Int) {
    def declaredSize: Long = bytes.length.toLong
  }

  def readFully(in: InputStream): Array[Byte] = {
    val out = new ByteArrayOutputStream
    val chunk = new Array[Byte](97)
    var n = in.read(chunk)
    while (n != -1) {
      out.write(chunk, 0, n)
      n = in.read(chunk)
    }
    out.toByteArray
  }

  /** A buffer that counts its references and refuses to be read once released. */
  final class CountingBuffer(val name: String, bytes: Array[Byte], initialRefs: Int)
      extends ManagedBuffer {
    private val refCount = new AtomicInteger(initialRefs)
    val retains = new AtomicInteger
    val releases = new AtomicInteger
    @volatile var overReleased = false

    def refs: Int = refCount.get

    override def size(): Long = bytes.length.toLong
    override def nioByteBuffer(): ByteBuffer = ByteBuffer.wrap(bytes).asReadOnlyBuffer()
    override def createInputStream(): InputStream = {
      if (refCount.get <= 0) throw new IllegalStateException(s"$this read after release")
      new ByteArrayInputStream(bytes)
    }
    override def retain(): ManagedBuffer = {
      retains.incrementAndGet()
      refCount.incrementAndGet()
      this
    }
    override def release(): ManagedBuffer = {
      releases.incrementAndGet()
      if (refCount.decrementAndGet() < 0) overReleased = true
      this
    }
    override def convertToNetty(): AnyRef = throw new UnsupportedOperationException
    override def convertToNettyForSsl(): AnyRef = throw new UnsupportedOperationException
    override def toString: String =
      s"CountingBuffer($name, refs=$refs, retains=${retains.get}, releases=${releases.get})"
  }

  /** Reads `okBytes` bytes, then fails the way a corrupt compressed stream does. */
  final class FailingStream(in: InputStream, okBytes: Int) extends FilterInputStream(in) {
    private var left = okBytes
    override def read(): Int = {
      if (left == 0) throw new IOException(FailingStream.Message)
      left -= 1
      super.read()
    }
    override def read(b: Array[Byte], off: Int, len: Int): Int = {
      if (left == 0) throw new IOException(FailingStream.Message)
      val n = super.read(b, off, math.min(len, left))
      if (n > 0) left -= n
      n
    }
  }

  object FailingStream {
    val Message = "stream is corrupt"
  }

  final class FakeLocal(
      override val address: BlockManagerId,
      blocks: Map[BlockId, Blk],
      failures: Set[BlockId])
      extends LocalBlocks {
    val reads = mutable.ArrayBuffer.empty[BlockId]
    val buffers = mutable.ArrayBuffer.empty[CountingBuffer]
    val tempFiles = mutable.ArrayBuffer.empty[File]

    override def read(blockId: BlockId): ManagedBuffer = {
      reads += blockId
      if (failures(blockId)) throw new IOException(s"cannot read $blockId")
      // The reader's one reference, as a fetched block's.
      val buf = new CountingBuffer(s"local $blockId", blocks(blockId).bytes, initialRefs = 1)
      buffers += buf
      buf
    }

    override def tempFile(): File = {
      val f = File.createTempFile("fetcher-suite", ".tmp")
      f.deleteOnExit()
      tempFiles += f
      f
    }
  }

  /** One fetch call as the fetcher made it; the test serves its blocks when it wants. */
  final class Call(
      transport: FakeTransport,
      val address: BlockManagerId,
      ids: Seq[BlockId],
      listener: TransportListener,
      val downloads: Option[DownloadFileManager]) {

    val blockIds: Seq[String] = ids.map(_.name)

    // By name, as Netty reports them: merged chunks' ids are no names BlockId parses.
    private def idOf(name: String): BlockId = ids.find(_.name == name).getOrElse(BlockId(name))

    /** Delivers a block the way the network layer does: the buffer is released on return. */
    def succeed(name: String, bytes: Array[Byte]): CountingBuffer = {
      val buf = new CountingBuffer(s"${address.executorId}/$name", bytes, initialRefs = 1)
      transport.track(buf)
      try listener.onFetched(idOf(name), buf, transport.name)
      finally buf.release()
      buf
    }

    def fail(name: String, e: Throwable): Unit = listener.onFailed(idOf(name), e)

    def succeedAll(blocks: Map[(String, String), Blk]): Unit =
      blockIds.foreach(n => succeed(n, blocks((address.executorId, n)).bytes))

    override def toString: String = s"Call(${address.executorId}, $blockIds)"
  }

  final class FakeTransport extends BlockTransport {
    val calls = mutable.ArrayBuffer.empty[Call]
    private val tracked = new ConcurrentHashMap[CountingBuffer, Unit]
    val diagnoses = mutable.ArrayBuffer.empty[(BlockManagerId, ShuffleBlockId, Long, String)]
    @volatile var cause: Cause = Cause.UNKNOWN_ISSUE
    @volatile var onFetch: Call => Unit = _ => ()
    private val hook = FakeTransport.nextHook.get

    def track(buf: CountingBuffer): Unit = tracked.put(buf, ())

    def buffers: Seq[CountingBuffer] = {
      import scala.jdk.CollectionConverters._
      tracked.keySet().asScala.toSeq
    }

    override def name: String = "fake"

    override def fetch(
        address: BlockManagerId,
        blockIds: Seq[BlockId],
        listener: TransportListener,
        downloads: Option[DownloadFileManager]): Unit = {
      val call = new Call(this, address, blockIds, listener, downloads)
      calls.synchronized(calls += call)
      if (hook != null) hook(this, call) else onFetch(call)
    }

    override def diagnoseCorruption(
        address: BlockManagerId,
        block: ShuffleBlockId,
        checksum: Long,
        algorithm: String): Cause = {
      diagnoses.synchronized(diagnoses += ((address, block, checksum, algorithm)))
      cause
    }
  }

  object FakeTransport {

    /** Lets a test hook the transport a harness creates before its constructor fetches. */
    val nextHook = new ThreadLocal[(FakeTransport, Call) => Unit]
  }

  /** A clock the test moves; counts down `watched` when the watched thread reads it. */
  final class TestClock extends Clock {
    private val now = new AtomicLong(1000000000L)
    @volatile private var watchedThread: Thread = null
    @volatile private var watched = new CountDownLatch(1)

    /** Returns a latch counted down when `t` first reads the clock from now on. */
    def watch(t: Thread): CountDownLatch = {
      watched = new CountDownLatch(1)
      watchedThread = t
      watched
    }

    def advance(millis: Long): Unit = now.addAndGet(TimeUnit.MILLISECONDS.toNanos(millis))

    override def nanoTime(): Long = {
      // Read first, signal after: the reading thread holds its value before the test moves on.
      val time = now.get
      if (Thread.currentThread() eq watchedThread) watched.countDown()
      time
    }
    override def getTimeMillis(): Long = TimeUnit.NANOSECONDS.toMillis(now.get)
    override def waitTillTime(targetTime: Long): Long = throw new UnsupportedOperationException
  }
}
