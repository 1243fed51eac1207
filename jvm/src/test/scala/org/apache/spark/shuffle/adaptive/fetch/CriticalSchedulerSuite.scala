package org.apache.spark.shuffle.adaptive.fetch

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.util.ManualClock

import AdaptiveFetchTestKit.{exec, randomSettings, settings}
import SchedulerTestState.refs
import org.apache.spark.shuffle.adaptive.flow.{FlowSettings, PeerTraffic}

class CriticalSchedulerSuite extends AnyFunSuite {

  private val Second = 1000L * 1000 * 1000

  private def critical(
      remote: Seq[(String, Seq[Long])],
      s: FlowSettings,
      shared: PeerTraffic,
      clock: ManualClock): CriticalScheduler = {
    remote.foreach { case (id, sizes) => shared.addPending(id, sizes.sum) }
    new CriticalScheduler(
      s,
      exec("0"),
      remote.zipWithIndex.map { case ((id, sizes), i) => exec(id) -> refs(1, i * 1000, sizes) },
      shared,
      clock)
  }

  /** Sends what the scheduler will, as the fetcher does: pending leaves, requests start. */
  private def sendAll(
      scheduler: FetchScheduler,
      state: SchedulerTestState,
      shared: PeerTraffic): Seq[String] = {
    val sent = Seq.newBuilder[String]
    var next = scheduler.next(state)
    while (next.isDefined) {
      val id = next.get.address.executorId
      state.send(next.get)
      shared.addPending(id, -next.get.size)
      shared.rate(id).requestStarted(0L)
      sent += id
      next = scheduler.next(state)
    }
    sent.result()
  }

  /** A past request of `bytes` that took `seconds`: the source's observed rate. */
  private def observed(shared: PeerTraffic, id: String, bytes: Long, seconds: Long): Unit = {
    val rate = shared.rate(id)
    rate.requestStarted(0L)
    rate.delivered(seconds * Second, bytes)
    rate.requestEnded(seconds * Second)
  }

  /** Links 1 and 2 at 100 bytes/ms, link 3 at 25; 40 blocks of 100 bytes from each. */
  private val unequalLinks = Seq(
    ("1", 100L, Seq.fill(40)(100L)),
    ("2", 100L, Seq.fill(40)(100L)),
    ("3", 25L, Seq.fill(40)(100L)))

  test("the slow source sends every ms while it has bytes left, even after long waits for it") {
    val s = settings("critical", limit = 1000, increment = 200)
    val history = new PeerTraffic(16)
    (1 to 16).foreach(_ => history.recordWait("3", 50.0))
    val sim = new LinkSimulation(s, unequalLinks, consumeRate = 150, shared = history)
    val ms = sim.run()
    assert(sim.idleMs("3") === 0)
    // Its link is the bound: 4000 bytes at 25 bytes/ms, plus the last block's consumption.
    assert(ms <= 160 + 5, s"took $ms ms")

    // Control: the adaptive order, with the same history, leaves the slow link idle and ends later.
    val adaptiveHistory = new PeerTraffic(16)
    (1 to 16).foreach(_ => adaptiveHistory.recordWait("3", 50.0))
    val adaptive = new LinkSimulation(
      settings("adaptive", limit = 1000, increment = 200),
      unequalLinks,
      consumeRate = 150,
      shared = adaptiveHistory)
    val adaptiveMs = adaptive.run()
    assert(adaptive.idleMs("3") > 20, adaptive.idleMs)
    assert(adaptiveMs > ms + 20)
  }

  test("with the consumer the bottleneck, it is kept busy: the slow link costs nothing") {
    val s = settings("critical", limit = 600, increment = 100)
    val sim = new LinkSimulation(s, unequalLinks, consumeRate = 40)
    // 12000 bytes at 40 bytes/ms: the consumer's bound.
    assert(sim.run() <= 300 + 5)
  }

  test("requests follow remaining time: bytes still needed over the rate they came at") {
    val s = settings("critical", limit = 100000, increment = 100)
    val shared = new PeerTraffic(16)
    val clock = new ManualClock()
    clock.setTime(1000)
    observed(shared, "1", bytes = 100, seconds = 1) // 1000 bytes: 10 s left
    observed(shared, "2", bytes = 10, seconds = 1) // 500 bytes: 50 s left
    observed(shared, "3", bytes = 1000, seconds = 1) // 5000 bytes: 5 s left
    val scheduler = critical(
      Seq("1" -> Seq.fill(10)(100L), "2" -> Seq.fill(5)(100L), "3" -> Seq.fill(50)(100L)),
      s,
      shared,
      clock)
    val state = new SchedulerTestState(100000, shared)
    val sent = sendAll(scheduler, state, shared)
    // Two requests to each source, longest remaining time first, then the least loaded.
    assert(sent.take(6) === Seq("2", "2", "1", "1", "3", "3"))
    assert(sent.size === 65)
  }

  test("a source never asked is assumed as fast as the mean of those that were") {
    val shared = new PeerTraffic(16)
    observed(shared, "1", bytes = 1000, seconds = 1)
    observed(shared, "2", bytes = 3000, seconds = 1)
    shared.addPending("1", 4000)
    shared.addPending("3", 4000)
    assert(shared.meanRate(Second) === 2000.0)
    assert(shared.remainingSeconds("1", Second, shared.meanRate(Second)) === 4.0)
    assert(shared.remainingSeconds("3", Second, shared.meanRate(Second)) === 2.0)
    assert(shared.remainingSeconds("4", Second, shared.meanRate(Second)) === 0.0)
    // Asked and still silent: nothing came, so it is the most urgent.
    shared.addPending("4", 10)
    shared.rate("4").requestStarted(0L)
    assert(shared.remainingSeconds("4", Second, 2000.0).isPosInfinity)
  }

  test("a loaded source (equal rate, growing waits) gets no more than it needs to stay busy") {
    val s = settings("critical", limit = 1000, increment = 100)
    val shared = new PeerTraffic(16)
    Seq("1", "2", "3").foreach(id => observed(shared, id, bytes = 100, seconds = 1))
    (1 to 16).foreach(i => shared.recordWait("1", 5.0 * i))
    val clock = new ManualClock()
    val scheduler =
      critical(Seq("1", "2", "3").map(_ -> Seq.fill(20)(100L)), s, shared, clock)
    val sent = sendAll(scheduler, new SchedulerTestState(1000, shared), shared)
    assert(sent.take(6).sorted === Seq("1", "1", "2", "2", "3", "3"))
    assert(sent.drop(6).nonEmpty && !sent.drop(6).contains("1"), sent)

    // Control: without its waits, the loaded source gets its share of the rest.
    val calm = new PeerTraffic(16)
    Seq("1", "2", "3").foreach(id => observed(calm, id, bytes = 100, seconds = 1))
    val even = critical(Seq("1", "2", "3").map(_ -> Seq.fill(20)(100L)), s, calm, clock)
    assert(sendAll(even, new SchedulerTestState(1000, calm), calm).drop(6).contains("1"))
  }

  test("tasks of one executor share the estimate: the second does not crowd the slow source") {
    val s = settings("critical", limit = 200, increment = 100)
    val shared = new PeerTraffic(16)
    observed(shared, "1", bytes = 10, seconds = 1)
    observed(shared, "2", bytes = 1000, seconds = 1)
    val clock = new ManualClock()
    val remote = Seq("1", "2").map(_ -> Seq.fill(10)(100L))
    val first =
      sendAll(critical(remote, s, shared, clock), new SchedulerTestState(200, shared), shared)
    assert(first === Seq("1", "1"))
    val second =
      sendAll(critical(remote, s, shared, clock), new SchedulerTestState(200, shared), shared)
    assert(second === Seq("2", "2"))

    // Control: a task with its own state would have gone to the slow source too.
    val alone = new PeerTraffic(16)
    observed(alone, "1", bytes = 10, seconds = 1)
    observed(alone, "2", bytes = 1000, seconds = 1)
    assert(
      sendAll(critical(remote, s, alone, clock), new SchedulerTestState(200, alone), alone)
        === Seq("1", "1"))
  }

  test("random links and layouts: every block once in map order, limits held, no starvation") {
    val random = new Random(21L)
    for (round <- 0 until 40) {
      val s = randomSettings("critical", random, round, limitRequests = true)
      val links = Seq("1", "2", "3", "4").take(1 + random.nextInt(4)).map { id =>
        (id, 1L + random.nextInt(200), Seq.fill(random.nextInt(20))(1L + random.nextInt(300)))
      }
      withClue(s"round $round, $s, $links: ") {
        val sim = new LinkSimulation(s, links, consumeRate = 1L + random.nextInt(300))
        sim.run(maxMs = 100000)
        links.foreach { case (id, _, sizes) =>
          assert(sim.requestedBlocks(id) === sizes, "blocks lost, split or reordered")
          assert(sim.shared.pendingFrom(id) === 0)
          assert(sim.shared.inFlightTo(id) === 0)
          assert(sim.shared.rate(id).requestsOutstanding === 0)
        }
      }
    }
  }

  test("every request is one the send rule allows") {
    // LinkSimulation checks each request against the rule and the per-address cap as it sends.
    val s = settings("critical", limit = 300, increment = 100, maxReqs = 2, maxBlocksPerAddress = 2)
    val sim = new LinkSimulation(s, unequalLinks, consumeRate = 60)
    sim.run()
    assert(sim.requested.nonEmpty)
    assert(sim.maxRequestsInFlight <= 2)
    assert(sim.maxBytesInFlight <= 300)
  }
}
