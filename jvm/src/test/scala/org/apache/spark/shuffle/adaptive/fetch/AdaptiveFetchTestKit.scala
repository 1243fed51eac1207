package org.apache.spark.shuffle.adaptive.fetch

import java.io.InputStream
import java.util.concurrent.{ConcurrentHashMap, LinkedBlockingQueue, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.Random

import org.apache.spark.{TaskContext, TaskContextImpl}
import org.apache.spark.executor.TempShuffleReadMetrics
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.util.Clock

import FetcherFakes._
import org.apache.spark.shuffle.adaptive.flow.{FetchBudget, FlowSettings, PeerTraffic}
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

/**
 * Test doubles for the adaptive fetch suites, on top of [[FetcherFakes]]: numeric
 * executors, settings with an order, and a reduce task ([[SimTask]]) whose simulated network the
 * test controls (deliver at once, or hold calls until the test releases them).
 */
private object AdaptiveFetchTestKit {

  def exec(id: String): BlockManagerId = BlockManagerId(id, s"host-$id", 7000)

  def settings(
      order: String,
      elastic: Boolean = false,
      limit: Long = 1000,
      increment: Long = 100,
      maxReqs: Int = Int.MaxValue,
      maxBlocksPerAddress: Int = Int.MaxValue,
      waitWindow: Int = 16,
      loadWeight: Double = 1.0,
      waitWeight: Double = 0.1): FlowSettings =
    FlowSettings(
      limit,
      maxReqs,
      maxBlocksPerAddress,
      increment,
      Long.MaxValue,
      detectCorrupt = true,
      detectCorruptUseExtraMemory = true,
      checksumEnabled = false,
      checksumAlgorithm = "ADLER32",
      order = order,
      elastic = elastic,
      waitWindow = waitWindow,
      loadWeight = loadWeight,
      waitWeight = waitWeight)

  /**
   * Settings for a property test's `round`: an increment of 1 to 400 bytes, a limit of 1 to 6
   * increments, at most 1 to 6 requests in flight when `limitRequests`, and every third round
   * at most 1 to 6 blocks in flight per address.
   */
  def randomSettings(
      order: String,
      random: Random,
      round: Int,
      limitRequests: Boolean): FlowSettings = {
    val inc = 1L + random.nextInt(400)
    settings(
      order,
      limit = inc * (1 + random.nextInt(6)),
      increment = inc,
      maxReqs = if (limitRequests) 1 + random.nextInt(6) else Int.MaxValue,
      maxBlocksPerAddress = if (round % 3 == 0) 1 + random.nextInt(6) else Int.MaxValue)
  }

  /** Every order, with the elastic limit on and off. */
  val AllOrders: Seq[(String, Boolean)] =
    Seq(
      "naive" -> false,
      "pairwise" -> false,
      "adaptive" -> false,
      "critical" -> false,
      "adaptive" -> true,
      "pairwise" -> true,
      "naive" -> true,
      "critical" -> true)

  /** A block with distinct content derived from its id. */
  def blk(shuffleId: Int, mapId: Long, size: Int, reduceId: Int = 0): Blk = {
    val random = new Random(shuffleId * 1000003L + mapId * 7919L + reduceId)
    Blk(
      ShuffleBlockId(shuffleId, mapId, reduceId),
      Array.fill(size)(random.nextInt(256).toByte),
      mapId.toInt)
  }

  /** `count` blocks of `size` bytes each for every source, with distinct map ids. */
  def layout(
      shuffleId: Int,
      sources: Seq[String],
      count: Int,
      size: Int): Seq[(BlockManagerId, Seq[Blk])] =
    sources.zipWithIndex.map { case (id, i) =>
      exec(id) -> (0 until count).map(j => blk(shuffleId, i * 1000L + j, size))
    }

  /** One fetch call with what was in flight (requested, not yet consumed) when it was made. */
  final case class Sent(
      call: Call,
      size: Long,
      inFlightBefore: Long,
      limit: Long,
      consumedBefore: Int)

  /**
   * One reduce task running on executor `self`, the one test double of a reduce task's fetcher
   * that the fetch suites share. Calls are delivered as soon as they are made unless
   * `hold(call)` is true; held calls wait in [[held]] for the test (blocks named in
   * `failBlocks` fail instead). The task is consumed with [[readOne]] / [[readAll]], which check
   * each block's bytes and record the order blocks were served in, or with [[readNext]] /
   * [[readAllBytes]], which return what the task read (through `wrapper`, as Spark's stream
   * wrapper decompresses or decrypts). Local blocks named in `localFailures` cannot be read.
   */
  final class SimTask(
      self: BlockManagerId,
      val byAddress: Seq[(BlockManagerId, Seq[Blk])],
      val settings: FlowSettings,
      shared: PeerTraffic = null,
      clock: Clock = new TestClock,
      hold: Call => Boolean = _ => false,
      neverStall: Boolean = true,
      failBlocks: Map[String, Throwable] = Map.empty,
      wrapper: (BlockId, InputStream) => InputStream = (_, in) => in,
      localFailures: Set[BlockId] = Set.empty,
      budget: FetchBudget = null) {

    val context: TaskContextImpl = TaskContext.empty()
    val metrics = new TempShuffleReadMetrics
    val counters = new FetchCounters
    val blocks: Map[(String, String), Blk] = byAddress.flatMap { case (address, bs) =>
      bs.map(b => (address.executorId, b.id.toString) -> b)
    }.toMap
    private val sizeOf: Map[String, Long] =
      blocks.map { case ((_, name), b) => name -> b.declaredSize }
    val local = new FakeLocal(
      self,
      blocks.collect {
        case ((e, _), b) if e == self.executorId => b.id -> b
      },
      localFailures)
    val transport = new FakeTransport
    val sent = mutable.ArrayBuffer.empty[Sent]
    val held = new LinkedBlockingQueue[Call]

    /** Names of the blocks served so far, in order (written by the consuming thread). */
    val consumed = mutable.ArrayBuffer.empty[String]
    val consumedCount = new AtomicInteger

    /** The fetcher's limit after each block it served. */
    val limits = mutable.ArrayBuffer.empty[Long]

    /** The fetch wait (ms) of each block served. */
    val waits = mutable.ArrayBuffer.empty[Long]
    @volatile private var built: ShuffleBlockFetcher = _
    private val elastic = settings.elasticLimit()

    /** Names of the remote blocks delivered so far. */
    val delivered: java.util.Set[String] = ConcurrentHashMap.newKeySet[String]()

    private def inFlight: Long = {
      val done = consumed.toSet
      sent.iterator.flatMap(_.call.blockIds).filterNot(done).map(sizeOf.getOrElse(_, 0L)).sum
    }

    transport.onFetch = { call =>
      val size = call.blockIds.map(sizeOf.getOrElse(_, 0L)).sum
      val limit = if (built == null) settings.maxBytesInFlight else elastic.current
      sent += Sent(call, size, inFlight, limit, consumed.size)
      // With `neverStall`, a call the running task would otherwise block on forever goes at once.
      if (hold(call) && !(neverStall && built != null && mustDeliver)) held.put(call)
      else deliver(call)
    }

    val fetcher: ShuffleBlockFetcher = FetcherFakes.newFetcher(
      context,
      transport,
      local,
      byAddress.iterator.map { case (a, bs) =>
        a -> bs.map(b => (b.id: BlockId, b.declaredSize, b.mapIndex))
      },
      wrapper,
      settings,
      elastic,
      metrics,
      counters,
      clock,
      shared,
      budget = Option(budget))
    built = fetcher

    def calls: Seq[Call] = sent.map(_.call).toSeq

    /** Takes one block, checks its bytes, and records it. */
    def readOne(): String = {
      val waitedBefore = counters(FetchCounters.FetchWaitMs)
      val (id, stream) = fetcher.next()
      val bytes =
        try readFully(stream)
        finally stream.close()
      val name = id.toString
      val expected = blocks.collectFirst { case ((_, n), b) if n == name => b.bytes.toSeq }
      assert(expected.contains(bytes.toSeq), s"$name served with wrong bytes")
      consumed += name
      limits += elastic.current
      waits += counters(FetchCounters.FetchWaitMs) - waitedBefore
      consumedCount.incrementAndGet()
      name
    }

    def readAll(): Seq[String] = {
      while (fetcher.hasNext) readOne()
      consumed.toSeq
    }

    /** Takes one block and reads it to the end, closing the stream. */
    def readNext(): (BlockId, Array[Byte]) = {
      val (id, stream) = fetcher.next()
      try (id, readFully(stream))
      finally stream.close()
    }

    def readAllBytes(): Seq[(BlockId, Array[Byte])] = {
      val out = mutable.ArrayBuffer.empty[(BlockId, Array[Byte])]
      while (fetcher.hasNext) out += readNext()
      out.toSeq
    }

    def allBuffers: Seq[CountingBuffer] = transport.buffers ++ local.buffers

    def deliver(call: Call): Unit = {
      call.blockIds.foreach { n =>
        delivered.add(n)
        failBlocks.get(n) match {
          case Some(e) => call.fail(n, e)
          case None => call.succeed(n, blocks((call.address.executorId, n)).bytes)
        }
      }
    }

    /** Delivers every held call, oldest first. */
    def releaseHeld(): Unit = {
      var call = held.poll()
      while (call != null) {
        deliver(call)
        call = held.poll()
      }
    }

    /** Delivers a random non-empty part of the held calls (if any), in random order. */
    def releaseSome(random: Random): Unit = {
      val all = mutable.ArrayBuffer.empty[Call]
      held.drainTo(all.asJava)
      if (all.nonEmpty) {
        val shuffled = random.shuffle(all)
        val n = 1 + random.nextInt(shuffled.size)
        shuffled.take(n).foreach(deliver)
        shuffled.drop(n).foreach(held.put)
      }
    }

    /**
     * True when the task could only block forever unless `call` is delivered now: nothing
     * delivered is left unread and no local block remains.
     */
    def mustDeliver: Boolean = {
      val done = consumed.toSet
      delivered.asScala.forall(done) && local.reads.size == localTotal
    }
    private lazy val localTotal = byAddress
      .filter(_._1.executorId == self.executorId)
      .flatMap(_._2)
      .count(_.declaredSize > 0)

    def finish(): Unit = context.markTaskCompleted(None)

    def assertNoLeak(): Unit =
      allBuffers.foreach { buf =>
        assert(!buf.overReleased && buf.refs == 0, s"leaked or over-released: $buf")
      }

    /** Blocks (with positive size) this task has to serve. */
    def expectedNames: Seq[String] =
      byAddress.flatMap(_._2).filter(_.declaredSize > 0).map(_.id.toString).sorted

    /** Every block served once, and every remote one requested once. */
    def assertEachOnce(): Unit = {
      assert(consumed.distinct.size == consumed.size, s"a block was served twice: $consumed")
      assert(consumed.sorted == expectedNames)
      val requested = calls.flatMap(_.blockIds)
      assert(requested.distinct.size == requested.size, s"a block was requested twice: $requested")
      assert(
        requested.sorted == byAddress
          .filter(_._1.executorId != self.executorId)
          .flatMap(_._2)
          .filter(_.declaredSize > 0)
          .map(_.id.toString)
          .sorted)
    }
  }

  /**
   * Runs `body` (which consumes `task`) on its own thread, acting as the network meanwhile:
   * each time that thread blocks for a result, the clock moves `waitMs` and the oldest held
   * call is delivered. Returns once the consumer finished; rethrows what it threw.
   */
  def starveConsumer(task: SimTask, clock: TestClock, waitMs: Long)(body: => Unit): Unit = {
    val failure = new LinkedBlockingQueue[Option[Throwable]]
    val consumer = new Thread(
      () => {
        failure.put(
          try { body; None }
          catch { case t: Throwable => Some(t) })
      },
      "sim-consumer")
    consumer.setDaemon(true)
    consumer.start()
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60)
    def timedOut(): Unit = {
      consumer.interrupt()
      throw new AssertionError("the simulated consumer made no progress")
    }
    // The only place the consumer parks is the fetcher's wait for a result.
    def parked: Boolean = consumer.getState == Thread.State.WAITING &&
      consumer.getStackTrace.exists(_.getMethodName == "takeFirst")
    while (consumer.isAlive) {
      if (parked) {
        val before = task.consumedCount.get
        val call = task.held.poll()
        assert(call != null, "the consumer waits but no call is held")
        clock.advance(waitMs)
        task.deliver(call)
        // Next delivery only after the consumer took this one, so no result queues up.
        while (task.consumedCount.get == before && consumer.isAlive) {
          if (System.nanoTime() > deadline) timedOut()
          Thread.onSpinWait()
        }
      } else {
        if (System.nanoTime() > deadline) timedOut()
        Thread.onSpinWait()
      }
    }
    consumer.join()
    failure.take().foreach(t => throw t)
  }
}
