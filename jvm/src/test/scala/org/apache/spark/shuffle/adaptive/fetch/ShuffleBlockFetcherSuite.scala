package org.apache.spark.shuffle.adaptive.fetch

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, File, FilterInputStream, IOException, InputStream}
import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentHashMap, CountDownLatch, CyclicBarrier, LinkedBlockingQueue, TimeUnit}
import java.util.concurrent.atomic.{AtomicInteger, AtomicLong}
import java.util.zip.Adler32

import scala.collection.mutable
import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{FetchFailed, TaskContext, TaskContextImpl}
import org.apache.spark.executor.TempShuffleReadMetrics
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.shuffle.DownloadFileManager
import org.apache.spark.network.shuffle.checksum.Cause
import org.apache.spark.network.util.{MapConfigProvider, TransportConf}
import org.apache.spark.shuffle.FetchFailedException
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.util.{Clock, SystemClock}

import AdaptiveFetchTestKit.SimTask
import FetcherFakes._
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.FetchOrder
import org.apache.spark.shuffle.adaptive.flow.{FetchBudget, FlowSettings}
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, TransportListener}

class ShuffleBlockFetcherSuite extends AnyFunSuite {

  private val localExec = BlockManagerId("local-exec", "local-host", 1000)
  private val exec1 = BlockManagerId("exec-1", "host-1", 1001)
  private val exec2 = BlockManagerId("exec-2", "host-2", 1002)
  private val exec3 = BlockManagerId("exec-3", "host-3", 1003)

  private def settings(
      maxBytesInFlight: Long = 1L << 20,
      maxReqsInFlight: Int = Int.MaxValue,
      maxBlocksPerAddress: Int = Int.MaxValue,
      requestSize: Long = 1L << 18,
      maxReqSizeShuffleToMem: Long = Long.MaxValue,
      detectCorrupt: Boolean = true,
      useExtraMemory: Boolean = true,
      checksum: Boolean = false): FlowSettings =
    FlowSettings(
      maxBytesInFlight,
      maxReqsInFlight,
      maxBlocksPerAddress,
      requestSize,
      maxReqSizeShuffleToMem,
      detectCorrupt,
      useExtraMemory,
      checksum,
      "ADLER32",
      order = FetchOrder.Naive,
      elastic = false)

  /** Distinct, recognisable content for each block. */
  private def block(
      shuffleId: Int,
      mapId: Long,
      reduceId: Int,
      size: Int,
      mapIndex: Int = -1): Blk = {
    val seed = shuffleId * 1000003L + mapId * 7919L + reduceId
    val random = new Random(seed)
    val bytes = Array.fill(size)(random.nextInt(256).toByte)
    Blk(
      ShuffleBlockId(shuffleId, mapId, reduceId),
      bytes,
      if (mapIndex >= 0) mapIndex else mapId.toInt)
  }

  /**
   * One reduce task on `localExec` over fake local and remote executors: remote calls are
   * served at once with `autoServe`, else left for the test in `transport.calls`.
   */
  private def harness(
      byAddress: Seq[(BlockManagerId, Seq[Blk])],
      settings: FlowSettings,
      wrapper: (BlockId, InputStream) => InputStream = (_, in) => in,
      autoServe: Boolean = true,
      clock: Clock = new SystemClock,
      localFailures: Set[BlockId] = Set.empty): SimTask =
    new SimTask(
      localExec,
      byAddress,
      settings,
      clock = clock,
      hold = _ => !autoServe,
      neverStall = false,
      wrapper = wrapper,
      localFailures = localFailures)

  private def expectedServed(byAddress: Seq[(BlockManagerId, Seq[Blk])]): Map[String, Seq[Byte]] =
    byAddress
      .flatMap(_._2)
      .filter(_.declaredSize > 0)
      .map(b => b.id.toString -> b.bytes.toSeq)
      .toMap

  private def assertServedExactlyOnce(
      served: Seq[(BlockId, Array[Byte])],
      byAddress: Seq[(BlockManagerId, Seq[Blk])]): Unit = {
    val names = served.map(_._1.toString)
    assert(names.distinct.size === names.size, s"a block was served twice: $names")
    assert(
      served.map { case (id, bytes) => id.toString -> bytes.toSeq }.toMap ===
        expectedServed(byAddress))
  }

  private def fetchFailure(e: FetchFailedException): FetchFailed =
    e.toTaskFailedReason.asInstanceOf[FetchFailed]

  test("every local and remote block is served once with its bytes; empty blocks skipped") {
    val empty1 = block(1, 3, 0, 0)
    val empty2 = block(1, 9, 0, 0)
    val byAddress = Seq(
      localExec -> Seq(block(1, 0, 0, 100), block(1, 1, 0, 3000), empty1),
      exec1 -> Seq(block(1, 2, 0, 50), empty2, block(1, 4, 0, 70000), block(1, 5, 0, 1)),
      exec2 -> Seq(block(1, 6, 0, 10), block(1, 7, 0, 20)),
      exec3 -> Seq(block(1, 8, 0, 999)))
    val h = harness(byAddress, settings(requestSize = 100))
    val served = h.readAllBytes()
    assertServedExactlyOnce(served, byAddress)
    assert(served.size === 8)
    assert(!h.fetcher.hasNext)
    intercept[NoSuchElementException](h.fetcher.next())

    // Empty blocks are neither read locally nor asked of a remote executor.
    assert(!h.local.reads.contains(empty1.id))
    val requested = h.transport.calls.toSeq.flatMap(_.blockIds)
    assert(!requested.contains(empty2.id.toString))
    assert(
      requested.sorted === byAddress
        .filter(_._1 != localExec)
        .flatMap(_._2)
        .filter(_.declaredSize > 0)
        .map(_.id.toString)
        .sorted)
    assert(h.transport.calls.forall(c => c.address != localExec))
    assert(
      h.local.reads.sortBy(_.toString) === Seq(byAddress.head._2(0).id, byAddress.head._2(1).id)
        .sortBy(_.toString))
    h.assertNoLeak()
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  test("limits: bytes in flight stay under maxBytesInFlight") {
    val byAddress = Seq(
      exec1 -> (0 until 10).map(i => block(2, i, 0, 100)),
      exec2 -> (10 until 20).map(i => block(2, i, 0, 100)),
      exec3 -> (20 until 30).map(i => block(2, i, 0, 100)))
    val s = settings(maxBytesInFlight = 500, requestSize = 200)
    val h = new LimitsProbe(byAddress, s)
    h.run()
    assert(h.maxBytes <= 500)
    // The limit was reached, not merely respected by fetching one request at a time.
    assert(h.maxBytes > 500 - 200)
    assert(h.maxReqs >= 2)
  }

  test("limits: a request larger than maxBytesInFlight travels alone") {
    val byAddress = Seq(
      exec1 -> Seq(block(3, 0, 0, 100), block(3, 1, 0, 2000), block(3, 2, 0, 100)),
      exec2 -> Seq(block(3, 3, 0, 150), block(3, 4, 0, 1500), block(3, 5, 0, 100)))
    val h = new LimitsProbe(byAddress, settings(maxBytesInFlight = 400, requestSize = 100))
    h.run()
    assert(h.maxBytes === 2000L)
    assert(h.transport.calls.exists(c => c.blockIds == Seq(ShuffleBlockId(3, 1, 0).toString)))
  }

  test("limits: requests in flight stay under maxReqsInFlight") {
    val byAddress = Seq(
      exec1 -> (0 until 8).map(i => block(4, i, 0, 10)),
      exec2 -> (8 until 16).map(i => block(4, i, 0, 10)))
    val h = new LimitsProbe(byAddress, settings(maxReqsInFlight = 3, requestSize = 10))
    h.run()
    assert(h.maxReqs === 3)
    assert(h.transport.calls.size === 16)
  }

  test("limits: blocks in flight per executor stay under maxBlocksInFlightPerAddress") {
    val byAddress = Seq(
      exec1 -> (0 until 12).map(i => block(5, i, 0, 10)),
      exec2 -> (12 until 15).map(i => block(5, i, 0, 10)))
    val h = new LimitsProbe(byAddress, settings(maxBlocksPerAddress = 4, requestSize = 15))
    h.run()
    assert(h.maxPerAddress === 4)
    // Requests are cut at two blocks (15 bytes), so the executor is skipped, not its requests
    // enlarged.
    assert(h.transport.calls.forall(_.blockIds.size <= 2))
  }

  test("limits hold for random layouts, with blocks delivered from another thread") {
    val random = new Random(77L)
    for (round <- 0 until 12) {
      val execs = Seq(exec1, exec2, exec3).take(1 + random.nextInt(3))
      var mapId = 0L
      val byAddress = (localExec +: execs).map { address =>
        address -> (0 until random.nextInt(15)).map { _ =>
          mapId += 1
          block(6 + round, mapId, 0, if (random.nextInt(6) == 0) 0 else 1 + random.nextInt(300))
        }
      }
      val maxBytes = 200L + random.nextInt(800)
      val s = settings(
        maxBytesInFlight = maxBytes,
        maxReqsInFlight = 1 + random.nextInt(4),
        maxBlocksPerAddress = 1 + random.nextInt(5),
        requestSize = 1L + random.nextInt(maxBytes.toInt))
      val h = new LimitsProbe(byAddress, s, threaded = Some(new Random(round)))
      withClue(s"round $round, $s: ") {
        h.run()
      }
    }
  }

  /** Runs a fetcher to the end while checking the limits at every fetch call. */
  private class LimitsProbe(
      byAddress: Seq[(BlockManagerId, Seq[Blk])],
      s: FlowSettings,
      threaded: Option[Random] = None) {
    var maxBytes = 0L
    var maxReqs = 0
    var maxPerAddress = 0
    val violations = mutable.ArrayBuffer.empty[String]
    private val outstanding = new LinkedBlockingQueue[Option[Call]]
    private val blocksByKey = byAddress.flatMap { case (a, bs) =>
      bs.map(b => (a.executorId, b.id.toString) -> b)
    }.toMap
    private val taken = mutable.Set.empty[(String, String)]
    private var task: SimTask = _

    private def check(transport: FakeTransport, call: Call): Unit = {
      val calls = transport.calls.toSeq
      def open(c: Call) = c.blockIds.filterNot(n => taken((c.address.executorId, n)))
      def size(c: Call, names: Seq[String]) =
        names.map(n => blocksByKey((c.address.executorId, n)).declaredSize).sum
      val openCalls = calls.filter(c => open(c).nonEmpty)
      val bytes = openCalls.map(c => size(c, open(c))).sum
      val perAddress = openCalls.filter(_.address == call.address).map(open(_).size).sum
      val clue = s"at fetch of ${call.blockIds} from ${call.address.executorId}: $bytes bytes, " +
        s"${openCalls.size} requests, $perAddress blocks of that executor in flight"
      // Recorded, not thrown: the fetcher turns a throwing transport into a fetch failure.
      def expect(ok: Boolean, what: String): Unit = if (!ok) violations += s"$what $clue"
      if (openCalls.size > 1) expect(bytes <= s.maxBytesInFlight, "maxBytesInFlight exceeded")
      else expect(openCalls == Seq(call), "a lone request is not the one sent")
      expect(openCalls.size <= s.maxReqsInFlight, "maxReqsInFlight exceeded")
      expect(perAddress <= s.maxBlocksInFlightPerAddress, "maxBlocksInFlightPerAddress exceeded")
      maxBytes = math.max(maxBytes, bytes)
      maxReqs = math.max(maxReqs, openCalls.size)
      maxPerAddress = math.max(maxPerAddress, perAddress)
    }

    def transport: FakeTransport = task.transport

    def run(): Unit = {
      val deliverer = threaded.map { random =>
        val t = new Thread(
          () => {
            var next = outstanding.take()
            while (next.isDefined) {
              val call = next.get
              random.shuffle(call.blockIds).foreach { n =>
                call.succeed(n, blocksByKey((call.address.executorId, n)).bytes)
              }
              next = outstanding.take()
            }
          },
          "test-deliverer")
        t.setDaemon(true)
        t.start()
        t
      }
      // The check runs inside the transport, on the task thread, before the call is served.
      val hook: (FakeTransport, Call) => Unit = { (transport, call) =>
        check(transport, call)
        if (threaded.isDefined) outstanding.put(Some(call)) else call.succeedAll(blocksByKey)
      }
      FakeTransport.nextHook.set(hook)
      try {
        task = harness(byAddress, s, autoServe = false)
      } finally FakeTransport.nextHook.remove()
      val served = mutable.ArrayBuffer.empty[(BlockId, Array[Byte])]
      def checkViolations(): Unit = assert(violations.isEmpty, violations.mkString("\n"))
      try {
        while (task.fetcher.hasNext) {
          val (id, stream) = task.fetcher.next()
          val key = blocksByKey.keys.find(_._2 == id.toString).get
          taken += key
          try served += id -> readFully(stream)
          finally stream.close()
        }
      } catch {
        case e: Throwable =>
          checkViolations()
          throw e
      } finally {
        outstanding.put(None)
        deliverer.foreach(_.join(TimeUnit.SECONDS.toMillis(30)))
      }
      checkViolations()
      assert(deliverer.forall(!_.isAlive), "the deliverer did not finish")
      assertServedExactlyOnce(served.toSeq, byAddress)
      task.assertNoLeak()
      task.context.markTaskCompleted(None)
      task.assertNoLeak()
    }
  }

  test("a remote fetch failure raises FetchFailedException for that block") {
    val failing = block(7, 42, 5, 64, mapIndex = 3)
    val byAddress = Seq(exec1 -> Seq(block(7, 1, 5, 10)), exec2 -> Seq(failing))
    val h = harness(byAddress, settings(), autoServe = false)
    val cause = new IOException("connection reset")
    h.transport.calls.foreach { call =>
      if (call.address == exec2) call.fail(failing.id.toString, cause)
      else call.succeedAll(h.blocks)
    }
    // A failure is served before blocks that arrived.
    val e = intercept[FetchFailedException](h.readAllBytes())
    val reason = fetchFailure(e)
    assert(reason.bmAddress === exec2)
    assert(reason.shuffleId === 7)
    assert(reason.mapId === 42L)
    assert(reason.mapIndex === 3)
    assert(reason.reduceId === 5)
    assert(e.getCause eq cause)
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  test("a transport that throws on fetch raises FetchFailedException") {
    val b = block(8, 4, 2, 30, mapIndex = 1)
    val transport = new FakeTransport
    transport.onFetch = _ => throw new IllegalStateException("client closed")
    val context = TaskContext.empty()
    val fetcher = FetcherFakes.newFetcher(
      context,
      transport,
      new FakeLocal(localExec, Map.empty, Set.empty),
      Iterator(exec1 -> Seq((b.id: BlockId, b.declaredSize, b.mapIndex))),
      (_, in) => in,
      settings(),
      settings().elasticLimit(),
      new TempShuffleReadMetrics)
    assert(transport.calls.size === 1)
    val e = intercept[FetchFailedException](fetcher.next())
    val reason = fetchFailure(e)
    assert(
      (reason.bmAddress, reason.shuffleId, reason.mapId, reason.mapIndex, reason.reduceId)
        === ((exec1, 8, 4L, 1, 2)))
    assert(e.getCause.getMessage === "client closed")
    context.markTaskCompleted(None)
  }

  test("a local read failure raises FetchFailedException for the local executor") {
    val bad = block(9, 11, 4, 40, mapIndex = 6)
    val h = harness(Seq(localExec -> Seq(bad)), settings(), localFailures = Set(bad.id))
    val e = intercept[FetchFailedException](h.fetcher.next())
    val reason = fetchFailure(e)
    assert(
      (reason.bmAddress, reason.shuffleId, reason.mapId, reason.mapIndex, reason.reduceId)
        === ((localExec, 9, 11L, 6, 4)))
    assert(e.getCause.isInstanceOf[IOException])
    assert(h.transport.calls.isEmpty)
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  /** Wraps with a stream that fails on read for the first `corruptTimes` opens of `target`. */
  private class Corrupting(target: BlockId, corruptTimes: Int)
      extends ((BlockId, InputStream) => InputStream) {
    val opens = new AtomicInteger
    override def apply(id: BlockId, in: InputStream): InputStream =
      if (id == target && opens.incrementAndGet() <= corruptTimes) new FailingStream(in, 3)
      else new FilterInputStream(in) {}
  }

  test("a block found corrupt when opened is fetched again and then served") {
    val victim = block(10, 1, 0, 500)
    val byAddress =
      Seq(localExec -> Seq(block(10, 0, 0, 20)), exec1 -> Seq(victim, block(10, 2, 0, 30)))
    val wrapper = new Corrupting(victim.id, corruptTimes = 1)
    val h = harness(byAddress, settings(), wrapper = wrapper)
    val served = h.readAllBytes()
    assertServedExactlyOnce(served, byAddress)
    assert(wrapper.opens.get === 2)
    val victimCalls = h.transport.calls.filter(_.blockIds.contains(victim.id.toString))
    assert(victimCalls.size === 2)
    assert(victimCalls.last.blockIds === Seq(victim.id.toString))
    assert(victimCalls.last.address === exec1)
    assert(h.transport.diagnoses.isEmpty)
    h.assertNoLeak()
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  test("a block corrupt twice fails with the checksum diagnosis") {
    val victim = block(11, 5, 2, 700, mapIndex = 4)
    val byAddress = Seq(exec2 -> Seq(victim))
    val wrapper = new Corrupting(victim.id, corruptTimes = 2)
    val h = harness(byAddress, settings(checksum = true), wrapper = wrapper)
    h.transport.cause = Cause.DISK_ISSUE
    val e = intercept[FetchFailedException](h.fetcher.next())
    assert(e.getMessage.contains("corrupted due to DISK_ISSUE"), e.getMessage)
    val reason = fetchFailure(e)
    assert(
      (reason.bmAddress, reason.shuffleId, reason.mapId, reason.mapIndex, reason.reduceId)
        === ((exec2, 11, 5L, 4, 2)))
    // The diagnosis covers the whole block, as the serving executor computed it.
    val adler = new Adler32
    adler.update(victim.bytes)
    assert(h.transport.diagnoses.toSeq === Seq((exec2, victim.id, adler.getValue, "ADLER32")))
    assert(h.transport.calls.size === 2)
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  test("a block corrupt twice without checksums fails with the read error") {
    val victim = block(12, 5, 2, 70)
    val h = harness(
      Seq(exec2 -> Seq(victim)),
      settings(),
      wrapper = new Corrupting(victim.id, corruptTimes = 2))
    val e = intercept[FetchFailedException](h.fetcher.next())
    assert(e.getMessage.contains("corrupt"), e.getMessage)
    assert(e.getCause.getMessage === FailingStream.Message)
    assert(h.transport.diagnoses.isEmpty)
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  test("an IOException while reading a served stream raises FetchFailedException") {
    for (checksum <- Seq(false, true)) {
      val victim = block(13, 1, 0, 400)
      // Without the extra-memory check the stream is opened lazily and fails while read.
      val h = harness(
        Seq(exec1 -> Seq(victim)),
        settings(useExtraMemory = false, checksum = checksum),
        wrapper = new Corrupting(victim.id, corruptTimes = 1))
      h.transport.cause = Cause.NETWORK_ISSUE
      val (_, stream) = h.fetcher.next()
      val e = intercept[FetchFailedException](readFully(stream))
      if (checksum) {
        assert(e.getMessage.contains("corrupted due to NETWORK_ISSUE"), e.getMessage)
      } else {
        assert(e.getCause.getMessage === FailingStream.Message)
      }
      assert(fetchFailure(e).bmAddress === exec1)
      // The failed stream released its block already.
      h.assertNoLeak()
      stream.close()
      h.context.markTaskCompleted(None)
      h.assertNoLeak()
    }
  }

  test("without corruption detection a read error is passed through as is") {
    val victim = block(14, 1, 0, 400)
    val h = harness(
      Seq(exec1 -> Seq(victim)),
      settings(detectCorrupt = false),
      wrapper = new Corrupting(victim.id, corruptTimes = 1))
    val (_, stream) = h.fetcher.next()
    val e = intercept[IOException](readFully(stream))
    assert(e.getMessage === FailingStream.Message)
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  test("a zero-size buffer from the transport raises FetchFailedException") {
    val b = block(15, 2, 1, 80)
    val h = harness(Seq(exec3 -> Seq(b)), settings(), autoServe = false)
    val buf = h.transport.calls.head.succeed(b.id.toString, Array.emptyByteArray)
    val e = intercept[FetchFailedException](h.fetcher.next())
    assert(e.getMessage.contains("zero-size"), e.getMessage)
    assert(fetchFailure(e).bmAddress === exec3)
    assert(buf.refs === 0)
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  test("requests larger than maxReqSizeShuffleToMem are fetched to disk") {
    val byAddress = Seq(
      exec1 -> Seq(block(16, 0, 0, 100), block(16, 1, 0, 100)),
      exec2 -> Seq(block(16, 2, 0, 120)),
      exec3 -> Seq(block(16, 3, 0, 151)))
    val h = harness(byAddress, settings(requestSize = 200, maxReqSizeShuffleToMem = 150))
    assertServedExactlyOnce(h.readAllBytes(), byAddress)
    val byExec = h.transport.calls.map(c => c.address.executorId -> c.downloads.isDefined).toMap
    assert(byExec === Map("exec-1" -> true, "exec-2" -> false, "exec-3" -> true))
    assert(h.transport.calls.filter(_.downloads.isDefined).forall(_.downloads.get eq h.fetcher))
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
  }

  /**
   * A reduce task on `localExec` under `budget` whose calls wait until the test delivers them or
   * the task would wait for them forever.
   */
  private def budgeted(shuffleId: Int, sizes: Seq[Int], budget: FetchBudget): SimTask = {
    val byAddress = Seq(exec1, exec2, exec3).zipWithIndex.map { case (exec, e) =>
      exec -> sizes.indices.filter(_ % 3 == e).map(i => block(shuffleId, i, e, sizes(i)))
    }
    new SimTask(
      localExec,
      byAddress,
      settings(maxBytesInFlight = 1000, requestSize = 100),
      hold = _ => true,
      // Held until the task would otherwise wait for them forever.
      neverStall = true,
      budget = budget)
  }

  test(
    "tasks of one executor hold at most its fetch budget together, each at least one increment") {
    // Reserves of 100 bytes for 2 slots, 100 bytes shared, each task's own limit 1000.
    val budget = new FetchBudget(300, 100, 2)
    val first = budgeted(40, Seq.fill(30)(50), budget)
    assert(first.sent.map(_.size).sum === 200, "its reserve and all that is shared")
    val second = budgeted(41, Seq.fill(30)(50), budget)
    assert(second.sent.map(_.size).sum === 100, "its reserve")
    assert(budget.used === 300)
    val tasks = Seq(first, second)
    while (tasks.exists(_.fetcher.hasNext)) {
      tasks.foreach { t =>
        t.releaseHeld()
        if (t.fetcher.hasNext) t.readOne()
        assert(budget.used <= budget.capacity)
      }
    }
    tasks.foreach(t => assert(t.consumed.sorted === t.expectedNames))
    tasks.foreach(_.context.markTaskCompleted(None))
    assert(budget.used === 0 && budget.peak === 300)
    tasks.foreach(_.assertNoLeak())
  }

  test("a task that ends with blocks in flight gives back its part of the budget") {
    val budget = new FetchBudget(300, 100, 2)
    val task = budgeted(42, Seq.fill(12)(50), budget)
    assert(budget.used === 200)
    task.context.markTaskCompleted(None)
    assert(budget.used === 0)
  }

  test("a request that does not fit the executor's fetch budget is fetched to disk") {
    // No shared part: each task holds its 100-byte reserve at most.
    val budget = new FetchBudget(200, 100, 2)
    val small = budgeted(43, Seq.fill(6)(50), budget)
    val large = budgeted(44, Seq(150), budget)
    assert(small.sent.forall(!_.call.downloads.isDefined) && small.sent.map(_.size).sum === 100)
    assert(large.sent.map(_.call.downloads.isDefined) === Seq(true))
    assert(large.counters(FetchCounters.RequestsToDisk) === 1)
    // Bytes streamed to disk hold none of the budget.
    assert(budget.used === 100)
    large.releaseHeld()
    large.readAll()
    assert(budget.used === 100)
    while (small.fetcher.hasNext) {
      small.releaseHeld()
      small.readOne()
    }
    Seq(small, large).foreach(_.context.markTaskCompleted(None))
    assert(budget.used === 0)
  }

  test("temp files registered by the transport are deleted when the task ends") {
    val h = harness(Seq(exec1 -> Seq(block(17, 0, 0, 10))), settings(), autoServe = false)
    val conf = new TransportConf("shuffle", MapConfigProvider.EMPTY)
    val file = h.fetcher.createTempFile(conf)
    assert(h.local.tempFiles.size === 1)
    assert(h.local.tempFiles.head.exists())
    assert(h.fetcher.registerTempFileToClean(file))
    h.context.markTaskCompleted(None)
    assert(!h.local.tempFiles.head.exists())
    // After cleanup a new temp file is refused, so the transport deletes it itself.
    val late = h.fetcher.createTempFile(conf)
    assert(!h.fetcher.registerTempFileToClean(late))
    late.delete()
  }

  test("metrics count local and remote blocks and bytes") {
    val byAddress = Seq(
      localExec -> Seq(block(18, 0, 0, 10), block(18, 1, 0, 20), block(18, 9, 0, 0)),
      exec1 -> Seq(block(18, 2, 0, 5), block(18, 3, 0, 6)),
      exec2 -> Seq(block(18, 4, 0, 7)))
    val h = harness(byAddress, settings())
    h.readAllBytes()
    assert(h.metrics.localBlocksFetched === 2)
    assert(h.metrics.localBytesRead === 30)
    assert(h.metrics.remoteBlocksFetched === 3)
    assert(h.metrics.remoteBytesRead === 18)
    assert(h.metrics.remoteBytesReadToDisk === 0)
    // Every result was ready before the task asked for it.
    assert(h.metrics.fetchWaitTime === 0)
    h.context.markTaskCompleted(None)
    assert(h.metrics.remoteBlocksFetched === 3)
    h.assertNoLeak()

    // The plugin's own counters: per source executor and per transport.
    val c = h.counters
    assert(c(FetchCounters.ReduceTasks) === 1)
    assert(
      c(FetchCounters.BytesBySource).toMap === Map(
        "local-exec" -> 30L,
        "exec-1" -> 11L,
        "exec-2" -> 7L))
    assert(
      c(FetchCounters.BlocksBySource).toMap === Map(
        "local-exec" -> 2L,
        "exec-1" -> 2L,
        "exec-2" -> 1L))
    assert(
      c(FetchCounters.BytesByTransport).toMap === Map(FetchCounters.Local -> 30L, "fake" -> 18L))
    assert(
      c(FetchCounters.BlocksByTransport).toMap === Map(FetchCounters.Local -> 2L, "fake" -> 3L))
    // One request per executor, both sent before the first block was taken.
    assert(c(FetchCounters.Requests) === 2)
    assert(c(FetchCounters.PeakBytesInFlight) === 18)
    assert(c.toMap("blocks_per_request") === 1.5)
  }

  test("fetch wait time and request time come from the clock while the task blocks") {
    val clock = new TestClock
    val b = block(19, 0, 0, 33)
    val h = harness(
      Seq(exec1 -> Seq(b, block(19, 1, 0, 44))),
      settings(requestSize = 10),
      autoServe = false,
      clock = clock)
    assert(h.transport.calls.size === 2)
    val first = h.transport.calls(0)
    val second = h.transport.calls(1)

    // The first block is delivered before the task asks: no waiting.
    clock.advance(3)
    first.succeedAll(h.blocks)
    // Requests go out in random order: either block may come first.
    val firstBytes = h.readNext()._2.length
    assert(h.metrics.fetchWaitTime === 0)
    assert(h.metrics.remoteReqsDuration === 3)

    // The task blocks on the second; the clock moves while it waits.
    val outcome = new LinkedBlockingQueue[Either[Throwable, (BlockId, Array[Byte])]]
    val consumer = new Thread(
      () => {
        outcome.put(
          try Right(h.readNext())
          catch { case t: Throwable => Left(t) })
      },
      "test-task")
    val waiting = clock.watch(consumer)
    consumer.start()
    // The task read the clock to start timing its wait: only then does the clock move.
    assert(waiting.await(30, TimeUnit.SECONDS), "the task never started waiting")
    assert(outcome.isEmpty)
    clock.advance(5)
    second.succeedAll(h.blocks)
    val result = outcome.poll(30, TimeUnit.SECONDS)
    assert(result != null, "the task did not get the block")
    result match {
      case Left(t) => throw t
      case Right((id, bytes)) =>
        assert(bytes.toSeq === h.blocks((exec1.executorId, id.toString)).bytes.toSeq)
    }
    assert(h.metrics.fetchWaitTime === 5)
    // 3 ms for the first request, 8 ms for the second (sent at the start).
    assert(h.metrics.remoteReqsDuration === 3 + 8)
    h.context.markTaskCompleted(None)
    h.assertNoLeak()
    assert(h.counters(FetchCounters.FetchWaitMs) === 5)
    // 77 bytes buffered for 3 ms, then the other block's bytes for 5 ms, over an 8 ms fetch.
    val bufferedByteMs = 77 * 3.0 + (77 - firstBytes) * 5.0
    assert(h.counters(FetchCounters.BufferedByteMs) === bufferedByteMs)
    assert(h.counters(FetchCounters.FetchMs) === 8.0)
    assert(h.counters.toMap("mean_buffered_bytes") === bufferedByteMs / 8)
  }

  test("cleanup releases queued results and open streams once; late callbacks are dropped") {
    val a1 = block(20, 0, 0, 100)
    val a2 = block(20, 1, 0, 100)
    val a3 = block(20, 2, 0, 100)
    val b1 = block(20, 3, 0, 100)
    val l1 = block(20, 4, 0, 100)
    val byAddress = Seq(localExec -> Seq(l1), exec1 -> Seq(a1, a2, a3), exec2 -> Seq(b1))
    val h = harness(byAddress, settings(requestSize = 1000), autoServe = false)
    val callA = h.transport.calls.find(_.address == exec1).get
    val callB = h.transport.calls.find(_.address == exec2).get
    callA.succeed(a1.id.toString, a1.bytes)
    callA.succeed(a2.id.toString, a2.bytes)
    callA.succeed(a3.id.toString, a3.bytes)

    // Two streams stay open (one partly read), one result stays queued, b1 is still in flight.
    val (_, open1) = h.fetcher.next()
    assert(open1.read() >= 0)
    val (_, open2) = h.fetcher.next()
    assert(h.allBuffers.count(_.refs > 0) === 3)

    h.context.markTaskCompleted(None)
    h.assertNoLeak()
    // Remote buffers: the fetcher's retains are matched by its releases (the transport owns one).
    h.transport.buffers.foreach(b => assert(b.releases.get === b.retains.get + 1, b.toString))

    // Late callbacks neither keep a reference nor queue anything.
    val late = callB.succeed(b1.id.toString, b1.bytes)
    assert(late.retains.get === 0)
    assert(late.refs === 0)
    callB.fail(b1.id.toString, new IOException("late"))
    // Closing a stream the cleanup closed does not release twice.
    open1.close()
    open2.close()
    h.assertNoLeak()
    // A second completion is harmless.
    h.fetcher.cleanup()
    h.assertNoLeak()
    assert(h.local.reads.isEmpty)
    // The queued block crossed the network: it counts as read.
    assert(h.metrics.remoteBlocksFetched === 3)
  }

  test("callbacks racing with cleanup never leak a buffer") {
    implicit val ec: ExecutionContext = ExecutionContext.global
    for (round <- 0 until 40) {
      val bs = (0 until 20).map(i => block(21, i, round, 16))
      val h = harness(Seq(exec1 -> bs), settings(requestSize = 1 << 20), autoServe = false)
      val call = h.transport.calls.head
      val start = new CyclicBarrier(2)
      val deliverer = Future {
        start.await()
        bs.foreach(b => call.succeed(b.id.toString, b.bytes))
      }
      start.await()
      h.context.markTaskCompleted(None)
      Await.result(deliverer, 30.seconds)
      h.assertNoLeak()
      assert(h.transport.buffers.size === 20)
    }
  }
}
