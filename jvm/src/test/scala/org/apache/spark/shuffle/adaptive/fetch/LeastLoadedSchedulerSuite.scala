package org.apache.spark.shuffle.adaptive.fetch

import scala.collection.mutable
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import AdaptiveFetchTestKit.{exec, randomSettings, settings}
import SchedulerTestState.{drain, refs}
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, FlowSettings, PeerTraffic}

class LeastLoadedSchedulerSuite extends AnyFunSuite {

  private def adaptive(
      self: String,
      remote: Seq[(String, Seq[Long])],
      s: FlowSettings,
      shared: PeerTraffic): LeastLoadedScheduler =
    new LeastLoadedScheduler(
      s,
      exec(self),
      remote.zipWithIndex.map { case ((id, sizes), i) =>
        exec(id) -> refs(1, i * 1000, sizes)
      },
      shared)

  private def sources(requests: Seq[BlockBatch[FetchItem]]): Seq[String] =
    requests.map(_.address.executorId)

  test("with no history a task starts at the closest successor of its executor") {
    val s = settings("adaptive", limit = 300, increment = 100)
    val equal = Seq.fill(5)(100L)
    for ((self, expected) <- Seq(
        "2" -> Seq("3", "0", "1"),
        "3" -> Seq("0", "1", "2"),
        "0" -> Seq("1", "2", "3"))) {
      val others = Seq("0", "1", "2", "3").filter(_ != self)
      val shared = new PeerTraffic(16)
      val state = new SchedulerTestState(300, shared)
      val scheduler = adaptive(self, others.reverse.map(_ -> equal), s, shared)
      // The first request goes to the successor; as its load grows, the next ones to the others.
      assert(sources(drain(scheduler, state)) === expected, s"on executor $self")
    }
  }

  test("numeric executor ids: 10 follows 9") {
    val s = settings("adaptive", limit = 100, increment = 100)
    val shared = new PeerTraffic(16)
    val scheduler = adaptive("9", Seq("8", "10", "2").map(_ -> Seq(100L)), s, shared)
    assert(sources(drain(scheduler, new SchedulerTestState(100, shared))) === Seq("10"))
  }

  test("equal sources: consecutive requests go to different sources") {
    val s = settings("adaptive", limit = 600, increment = 100)
    val shared = new PeerTraffic(16)
    val state = new SchedulerTestState(600, shared)
    val scheduler = adaptive("0", Seq("1", "2", "3").map(_ -> Seq.fill(10)(100L)), s, shared)
    val first = sources(drain(scheduler, state))
    assert(first === Seq("1", "2", "3", "1", "2", "3"))
    // As blocks are consumed, new requests go to the least loaded source.
    val later = mutable.ArrayBuffer.empty[String]
    while (state.openBlocks.nonEmpty) {
      state.consumeOldest()
      later ++= sources(drain(scheduler, state))
    }
    later
      .sliding(2)
      .foreach(p => assert(p(0) != p(1), s"two requests in a row to one source: $later"))
    assert(
      (first ++ later).groupBy(identity).view.mapValues(_.size).toMap ===
        Map("1" -> 10, "2" -> 10, "3" -> 10))
  }

  test("a source its executor waited long for gets fewer requests while others have blocks") {
    val s = settings("adaptive", limit = 300, increment = 100)
    def run(shared: PeerTraffic): Seq[String] = {
      val state = new SchedulerTestState(300, shared)
      val scheduler = adaptive("0", Seq("1", "2", "3").map(_ -> Seq.fill(6)(100L)), s, shared)
      val out = mutable.ArrayBuffer.empty[String] ++= sources(drain(scheduler, state))
      while (state.openBlocks.nonEmpty) {
        state.consumeOldest()
        out ++= sources(drain(scheduler, state))
      }
      out.toSeq
    }
    // Without history source 1 (the successor) is asked first and as often as the others.
    val fair = run(new PeerTraffic(16))
    assert(fair.head === "1")
    assert(fair.take(9).count(_ == "1") === 3)

    val shared = new PeerTraffic(16)
    (1 to 4).foreach(_ => shared.recordWait("1", 50.0))
    val order = run(shared)
    // Every block is still requested once in the end...
    assert(order.count(_ == "1") === 6)
    // ...but none from the slow source while both others still have blocks.
    val othersDone = order.indices.find { i =>
      order.take(i + 1).count(_ == "2") == 6 || order.take(i + 1).count(_ == "3") == 6
    }.get
    assert(order.take(othersDone + 1).count(_ == "1") === 0, order)
    assert(order.take(4).toSet === Set("2", "3"))
  }

  test("the score adds the in-flight load of all the executor's tasks and the waits") {
    val s = settings("adaptive", increment = 100, loadWeight = 2.0, waitWeight = 0.5)
    val shared = new PeerTraffic(4)
    val scheduler = adaptive("0", Seq("1" -> Seq(1L)), s, shared)
    assert(scheduler.score("1") === 0.0)
    shared.addInFlight("1", 300)
    shared.recordWait("1", 10.0)
    shared.recordWait("1", 30.0)
    assert(scheduler.score("1") === 2.0 * 3 + 0.5 * 20.0)
  }

  test("two tasks of one executor: the second starts where the first is not loading") {
    val s = settings("adaptive", limit = 100, increment = 100)
    val remote = Seq("1", "2", "3").map(_ -> Seq.fill(3)(100L))
    val shared = new PeerTraffic(16)
    val first = drain(adaptive("0", remote, s, shared), new SchedulerTestState(100, shared))
    val second = drain(adaptive("0", remote, s, shared), new SchedulerTestState(100, shared))
    val third = drain(adaptive("0", remote, s, shared), new SchedulerTestState(100, shared))
    assert(sources(first) === Seq("1"))
    assert(sources(second) === Seq("2"))
    assert(sources(third) === Seq("3"))
    // With separate executor states (no coordination) both would have piled onto source 1.
    val alone = new PeerTraffic(16)
    assert(
      sources(drain(adaptive("0", remote, s, alone), new SchedulerTestState(100, alone)))
        === Seq("1"))
  }

  test("the increment aggregates small blocks, never beyond it") {
    val s = settings("adaptive", limit = 10000, increment = 100)
    val shared = new PeerTraffic(16)
    val scheduler = adaptive("0", Seq("1" -> Seq.fill(10)(30L)), s, shared)
    val requests = drain(scheduler, new SchedulerTestState(10000, shared))
    assert(requests.map(_.blocks.size) === Seq(3, 3, 3, 1))
    assert(requests.map(_.size) === Seq(90, 90, 90, 30))
    // The blocks are requested in map order, each once.
    assert(requests.flatMap(_.blocks.collect { case b: BlockRef => b.mapIndex }) === (0 until 10))
  }

  test("a block is never split: a block of at least the increment at the head travels alone") {
    val s = settings("adaptive", limit = 10000, increment = 100)
    val shared = new PeerTraffic(16)
    val scheduler = adaptive("0", Seq("1" -> Seq(500L, 30L, 30L, 30L, 30L, 100L, 20L)), s, shared)
    val requests = drain(scheduler, new SchedulerTestState(10000, shared))
    assert(
      requests.map(_.blocks.map(_.size)) ===
        Seq(Seq(500L), Seq(30L, 30L, 30L), Seq(30L), Seq(100L), Seq(20L)))
  }

  test(
    "requests, random layouts: within the increment unless one larger block; full unless the source ran out") {
    val random = new Random(3L)
    for (round <- 0 until 30) {
      val s = randomSettings("adaptive", random, round, limitRequests = false)
      val inc = s.requestSize
      val remote = Seq("1", "2", "3", "4").take(1 + random.nextInt(4)).map { id =>
        id -> Seq.fill(random.nextInt(20))(1L + random.nextInt(300).toLong)
      }
      val shared = new PeerTraffic(16)
      val state = new SchedulerTestState(s.maxBytesInFlight, shared)
      val scheduler = adaptive("0", remote, s, shared)
      val all = mutable.ArrayBuffer.empty[BlockBatch[FetchItem]] ++= drain(scheduler, state)
      while (state.openBlocks.nonEmpty) {
        state.consumeOldest()
        all ++= drain(scheduler, state)
      }
      withClue(s"round $round, $s, $remote: ") {
        val byExec = all.groupBy(_.address.executorId)
        remote.foreach { case (id, sizes) =>
          val rs = byExec.getOrElse(id, Seq.empty)
          assert(rs.flatMap(_.blocks.map(_.size)) === sizes, "blocks lost, split or reordered")
          rs.zipWithIndex.foreach { case (r, i) =>
            val last = i == rs.size - 1
            assert(r.size <= inc || r.blocks.size == 1, s"overshoot of $r")
            if (!last && s.maxBlocksInFlightPerAddress == Int.MaxValue) {
              assert(
                r.size + rs(i + 1).blocks.head.size > inc,
                s"$r sent below the increment though its next block fitted")
            }
          }
        }
      }
    }
  }

  test("send rule: a request leaves only if it fits under the limit, or nothing is in flight") {
    val random = new Random(8L)
    for (round <- 0 until 30) {
      val inc = 100L
      val limit = inc * (1 + random.nextInt(8))
      val s = settings("adaptive", limit = limit, increment = inc, maxReqs = 1 + random.nextInt(6))
      // Each source's blocks divide the increment, so its requests are at most one increment.
      val remote = Seq("1", "2", "3").map { id =>
        val size = Seq(10L, 20L, 25L, 50L, 100L)(random.nextInt(5))
        id -> Seq.fill(random.nextInt(30))(size)
      }
      val shared = new PeerTraffic(16)
      val state = new SchedulerTestState(limit, shared)
      val scheduler = adaptive("0", remote, s, shared)
      var maxSeen = 0L
      val blocks = remote.map(_._2.size).sum
      var sent = 0
      def step(): Unit = {
        var next = scheduler.next(state)
        while (next.isDefined) {
          val before = state.bytesInFlight
          assert(before == 0 || before + next.get.size <= limit, s"sent at $before in flight")
          assert(state.requestsInFlight < s.maxReqsInFlight || before == 0)
          sent += next.get.blocks.size
          state.send(next.get)
          maxSeen = math.max(maxSeen, state.bytesInFlight)
          next = scheduler.next(state)
        }
        // It stopped because the rule forbids another request, not early.
        if (sent < blocks && state.requestsInFlight < s.maxReqsInFlight) {
          assert(state.bytesInFlight > limit - inc, s"stopped at ${state.bytesInFlight}")
        }
      }
      withClue(s"round $round: ") {
        step()
        while (sent < blocks) {
          state.consumeOldest()
          step()
        }
      }
    }
  }

  test("blocks in flight per executor stay under maxBlocksInFlightPerAddress") {
    val s = settings("adaptive", limit = 10000, increment = 100, maxBlocksPerAddress = 3)
    val shared = new PeerTraffic(16)
    val state = new SchedulerTestState(10000, shared)
    val scheduler = adaptive("0", Seq("1" -> Seq.fill(10)(10L), "2" -> Seq(10L)), s, shared)
    val first = drain(scheduler, state)
    assert(first.map(r => r.address.executorId -> r.blocks.size) === Seq("1" -> 3, "2" -> 1))
    assert(state.blocksInFlightTo(exec("1")) === 3)
    state.consumeOldest()
    assert(drain(scheduler, state).map(_.blocks.size) === Seq(3))
  }

  test("the elastic limit replaces the hard limit in the send rule") {
    val s = settings("adaptive", limit = 1000, increment = 100)
    val shared = new PeerTraffic(16)
    val state = new SchedulerTestState(limit = 300, shared)
    val scheduler = adaptive("0", Seq("1" -> Seq.fill(20)(100L)), s, shared)
    assert(drain(scheduler, state).size === 3)
    state.limit = 500
    assert(drain(scheduler, state).size === 2)
    state.limit = 100
    state.consumeOldest()
    state.consumeOldest()
    state.consumeOldest()
    state.consumeOldest()
    assert(state.bytesInFlight === 100)
    assert(drain(scheduler, state).isEmpty)
    state.consumeOldest()
    // Nothing in flight: one request may always leave.
    assert(drain(scheduler, state).size === 1)
  }

}
