package org.apache.spark.shuffle.adaptive.fetch

import java.io.IOException

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.FetchFailed
import org.apache.spark.shuffle.FetchFailedException

import AdaptiveFetchTestKit._
import FetcherFakes._
import org.apache.spark.shuffle.adaptive.flow.PeerTraffic
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

/** The fetcher with each exchange order, over simulated sources and a simulated consumer. */
class AdaptiveFetchSuite extends AnyFunSuite {

  private def sources(task: SimTask): Seq[String] = task.calls.map(_.address.executorId)

  private def mixedLayout(shuffleId: Int) = Seq(
    exec("0") -> Seq(blk(shuffleId, 0, 100), blk(shuffleId, 1, 3000), blk(shuffleId, 2, 0)),
    exec("1") -> Seq(
      blk(shuffleId, 10, 50),
      blk(shuffleId, 11, 0),
      blk(shuffleId, 12, 7000),
      blk(shuffleId, 13, 1)),
    exec("2") -> (20 until 32).map(m => blk(shuffleId, m, 10 + m)),
    exec("3") -> Seq(blk(shuffleId, 40, 999)),
    exec("5") -> (50 until 60).map(m => blk(shuffleId, m, 300)))

  test("every order serves every block once with its bytes (blocks delivered at once)") {
    for ((order, elastic) <- AllOrders) withClue(s"$order, elastic=$elastic: ") {
      val layout = mixedLayout(1)
      val t =
        new SimTask(exec("0"), layout, settings(order, elastic, limit = 2000, increment = 400))
      t.readAll()
      t.assertEachOnce()
      assert(t.consumed.size === 28)
      assert(!t.fetcher.hasNext)
      intercept[NoSuchElementException](t.fetcher.next())
      assert(t.counters(FetchCounters.Requests) === t.calls.size)
      t.assertNoLeak()
      t.finish()
      t.assertNoLeak()
    }
  }

  test("every order serves every block once with its bytes (random delivery order)") {
    for ((order, elastic) <- AllOrders; seed <- 0 until 5) {
      withClue(s"$order, elastic=$elastic, seed $seed: ") {
        val random = new Random(seed)
        // A call is held unless the task would otherwise block forever.
        val task = new SimTask(
          exec("3"),
          mixedLayout(2),
          settings(
            order,
            elastic,
            limit = 1 + random.nextInt(3000),
            increment = 1 + random.nextInt(300),
            maxReqs = 1 + random.nextInt(5)),
          hold = _ => random.nextInt(4) != 0)
        while (task.fetcher.hasNext) {
          task.releaseSome(random)
          task.readOne()
        }
        task.assertEachOnce()
        task.finish()
        task.assertNoLeak()
      }
    }
  }

  test(
    "a slow source (its waits in the executor state) gets fewer requests while others have blocks") {
    val layout = Seq("1", "2", "3").zipWithIndex.map { case (id, i) =>
      exec(id) -> (0 until 8).map(m => blk(3, i * 100L + m, 100))
    }
    val s = settings("adaptive", limit = 300, increment = 100)

    def run(shared: PeerTraffic): SimTask = {
      val t = new SimTask(exec("0"), layout, s, shared)
      t.readAll()
      t.assertEachOnce()
      t.finish()
      t.assertNoLeak()
      t
    }
    // Until the first of the others ran out of blocks.
    def whileOthersHaveBlocks(order: Seq[String], slow: String): Seq[String] = {
      val others = order.distinct.filter(_ != slow)
      val end = order.indices.find(i => others.exists(o => order.take(i + 1).count(_ == o) == 8))
      order.take(end.get + 1)
    }

    // Control: without history, source 1 is asked first and as much as the others.
    val fair = whileOthersHaveBlocks(sources(run(new PeerTraffic(16))), "1")
    assert(fair.head === "1")
    assert(fair.count(_ == "1") >= fair.count(_ == "3") - 1)

    val shared = new PeerTraffic(16)
    (1 to 8).foreach(_ => shared.recordWait("1", 40.0))
    val slowTask = run(shared)
    val early = whileOthersHaveBlocks(sources(slowTask), "1")
    assert(early.count(_ == "1") < early.count(_ == "2"), early)
    assert(early.count(_ == "1") < early.count(_ == "3"), early)
    // All its blocks are still fetched, after the others'.
    assert(slowTask.counters(FetchCounters.BytesBySource)("1") === 800)
    val bytesEarly = slowTask.sent
      .take(early.size)
      .groupBy(_.call.address.executorId)
      .view
      .mapValues(_.map(_.size).sum)
      .toMap
    assert(bytesEarly.getOrElse("1", 0L) < bytesEarly("2"))
    // Nothing of this task remains as load once it ended.
    Seq("1", "2", "3").foreach(id => assert(shared.inFlightTo(id) === 0))
  }

  test("a source the tasks waited for is learnt as slow and avoided by the next task") {
    val layout = Seq("1", "2", "3").zipWithIndex.map { case (id, i) =>
      exec(id) -> (0 until 6).map(m => blk(4, i * 100L + m, 100))
    }
    val s = settings("adaptive", limit = 300, increment = 100)
    val shared = new PeerTraffic(16)
    val clock = new TestClock
    // Source 2 answers only once the consumer waits for it, 40 ms later; the others at once.
    val first = new SimTask(
      exec("0"),
      layout,
      s,
      shared,
      clock,
      hold = _.address.executorId == "2",
      neverStall = false)
    starveConsumer(first, clock, waitMs = 40) {
      first.readAll()
    }
    first.assertEachOnce()
    first.finish()
    first.assertNoLeak()
    assert(shared.averageWaitMs("2") === 40.0)
    assert(shared.averageWaitMs("1") === 0.0)
    assert(shared.averageWaitMs("3") === 0.0)
    assert(first.counters(FetchCounters.WaitMsBySource)("2") === 40.0 * 6)

    val second = new SimTask(exec("0"), layout, s, shared)
    second.readAll()
    second.assertEachOnce()
    val order = sources(second)
    // Source 2 only once the others have nothing left.
    assert(order.dropWhile(_ != "2").forall(_ == "2"), order)
    second.finish()
  }

  test("equal sources: consecutive requests go to different sources") {
    val layout = Seq("1", "2", "3", "4").zipWithIndex.map { case (id, i) =>
      exec(id) -> (0 until 6).map(m => blk(5, i * 100L + m, 100))
    }
    for (order <- Seq("adaptive", "naive")) {
      val t = new SimTask(
        exec("0"),
        layout,
        settings(order, limit = 400, increment = 100),
        hold = _ => true)
      val first = sources(t)
      assert(first.size === 4)
      if (order == "adaptive") assert(first === Seq("1", "2", "3", "4"))
      // Consuming in delivery order keeps spreading: no two requests in a row to one source.
      while (t.fetcher.hasNext) {
        t.releaseHeld()
        t.readOne()
      }
      t.assertEachOnce()
      if (order == "adaptive") {
        sources(t).sliding(2).foreach(p => assert(p(0) != p(1), sources(t)))
      }
      t.finish()
    }
  }

  test("two tasks of one executor do not pile onto the same source") {
    val layout = Seq("1", "2", "3").zipWithIndex.map { case (id, i) =>
      exec(id) -> (0 until 3).map(m => blk(6, i * 100L + m, 100))
    }
    val s = settings("adaptive", limit = 100, increment = 100)
    val shared = new PeerTraffic(16)
    val a = new SimTask(exec("0"), layout, s, shared, hold = _ => true)
    assert(sources(a) === Seq("1"))
    assert(shared.inFlightTo("1") === 100)
    val b = new SimTask(exec("0"), layout, s, shared, hold = _ => true)
    assert(sources(b) === Seq("2"))
    // Task a consumed its block; its next request goes to the least loaded source again,
    // not to 2 where b is loading.
    a.releaseHeld()
    a.readOne()
    assert(sources(a) === Seq("1"))
    a.readOne()
    assert(sources(a) === Seq("1", "1"))
    for (t <- Seq(a, b)) {
      while (t.fetcher.hasNext) {
        t.releaseHeld()
        t.readOne()
      }
      t.assertEachOnce()
      t.finish()
      t.assertNoLeak()
    }
    Seq("1", "2", "3").foreach(id => assert(shared.inFlightTo(id) === 0))

    // Control: tasks that do not share the state both start at source 1.
    val c = new SimTask(exec("0"), layout, s, new PeerTraffic(16), hold = _ => true)
    val d = new SimTask(exec("0"), layout, s, new PeerTraffic(16), hold = _ => true)
    assert(sources(c) === Seq("1"))
    assert(sources(d) === Seq("1"))
  }

  test("a task's pending bytes and outstanding requests leave the executor's estimate as it ends") {
    val layout = Seq("1", "2").zipWithIndex.map { case (id, i) =>
      exec(id) -> (0 until 6).map(m => blk(7, i * 100L + m, 100))
    }
    val s = settings("critical", limit = 300, increment = 100)
    val shared = new PeerTraffic(16)
    val clock = new TestClock
    val done = new SimTask(exec("0"), layout, s, shared, clock, hold = _ => true)
    assert(shared.pendingFrom("1") + shared.pendingFrom("2") === 1200 - 300)
    assert(done.calls.size === 3)
    clock.advance(100)
    while (done.fetcher.hasNext) {
      done.releaseHeld()
      done.readOne()
    }
    done.assertEachOnce()
    done.finish()
    Seq("1", "2").foreach { id =>
      assert(shared.pendingFrom(id) === 0)
      assert(shared.inFlightTo(id) === 0)
      assert(shared.rate(id).requestsOutstanding === 0)
    }
    // 600 bytes from each source, delivered 100 ms into its busy time.
    assert(shared.rate("1").bytesPerSecond(clock.nanoTime()).get > 0)
    // What the skew report shows: the rate the executor had observed as the task ended.
    Seq("1", "2").foreach { id =>
      assert(
        done.counters.observedRateBySource(id) ===
          shared.rate(id).bytesPerSecond(clock.nanoTime()).get)
      assert(done.counters(FetchCounters.HostBySource)(id) === s"host-$id")
    }

    // A task killed with requests outstanding and blocks not yet asked for.
    val killed = new SimTask(exec("0"), layout, s, shared, hold = _ => true)
    assert(shared.rate("1").requestsOutstanding + shared.rate("2").requestsOutstanding === 3)
    killed.finish()
    Seq("1", "2").foreach { id =>
      assert(shared.pendingFrom(id) === 0)
      assert(shared.inFlightTo(id) === 0)
      assert(shared.rate(id).requestsOutstanding === 0)
    }
    // Its late replies change nothing.
    killed.releaseHeld()
    assert(shared.rate("1").requestsOutstanding === 0)
    killed.assertNoLeak()
  }

  test("static circular start: the closest successor first, then the others as load grows") {
    def firstCalls(self: String, ids: Seq[String], limit: Long): Seq[String] = {
      val layout = ids.filter(_ != self).zipWithIndex.map { case (id, i) =>
        exec(id) -> (0 until 2).map(m => blk(7, i * 100L + m, 100))
      }
      val t = new SimTask(
        exec(self),
        layout,
        settings("adaptive", limit = limit, increment = 100),
        hold = _ => true)
      val out = sources(t)
      t.finish()
      out
    }
    val four = Seq("0", "1", "2", "3")
    assert(firstCalls("2", four, 100) === Seq("3"))
    assert(firstCalls("2", four, 300) === Seq("3", "0", "1"))
    assert(firstCalls("3", four, 100) === Seq("0"))
    assert(firstCalls("3", four, 300) === Seq("0", "1", "2"))
    val eleven = (0 to 10).map(_.toString)
    assert(firstCalls("9", eleven, 300) === Seq("10", "0", "1"))
    assert(firstCalls("10", eleven, 200) === Seq("0", "1"))
  }

  private def elasticRun(elastic: Boolean): (SimTask, Seq[Boolean]) = {
    val layout = Seq("1", "2", "3").zipWithIndex.map { case (id, i) =>
      exec(id) -> (0 until 10).map(m => blk(8, i * 100L + m, 100))
    }
    val clock = new TestClock
    var made = 0
    // The first ten requests are answered at once (the consumer is the slow side), later ones
    // only when the consumer waits for them (it starves).
    val t = new SimTask(
      exec("0"),
      layout,
      settings("adaptive", elastic = elastic, limit = 1000, increment = 100),
      clock = clock,
      hold = _ => { made += 1; made > 10 },
      neverStall = false)
    starveConsumer(t, clock, waitMs = 10) {
      t.readAll()
    }
    t.assertEachOnce()
    t.finish()
    t.assertNoLeak()
    (t, t.waits.map(_ > 0).toSeq)
  }

  test("elastic limit: shrinks per ready block, grows back per wait, within [increment, hard]") {
    val (t, waited) = elasticRun(elastic = true)
    // The model: one increment down after a block that was ready, one up after a wait.
    var model = 1000L
    val expected = waited.map { w =>
      model = if (w) math.min(1000, model + 100) else math.max(100, model - 100)
      model
    }
    assert(t.limits.toSeq === expected)
    assert(waited.take(10).forall(!_), waited)
    assert(t.limits.take(10) === Seq(900, 800, 700, 600, 500, 400, 300, 200, 100, 100))
    assert(waited.drop(10).forall(identity), waited)
    assert(t.limits.drop(10).take(10) === Seq(200, 300, 400, 500, 600, 700, 800, 900, 1000, 1000))
    assert(t.waits.drop(10).forall(_ === 10))
    assert(t.limits.forall(l => l >= 100 && l <= 1000))

    val c = t.counters
    assert(c(FetchCounters.LimitMin) === 100)
    assert(c(FetchCounters.LimitMax) === 1000)
    assert(c(FetchCounters.LimitChanges) === 9 + 9)
    // The clock only moved during the 20 waits, 10 ms each, at the limit before each block.
    val before = 1000L +: t.limits.toSeq.init
    val expectedByteMs = waited.zip(before).collect { case (true, l) => l * 10.0 }.sum
    assert(c(FetchCounters.FetchMs) === 200.0)
    assert(c(FetchCounters.LimitByteMs) === expectedByteMs)
    assert(c.toMap("elastic_limit_mean") === expectedByteMs / 200.0)
    assert(c.toMap("elastic_limit_min") === 100L)
    assert(c.toMap("elastic_limit_changes") === 18L)
    // Requests left only while one increment fitted under the limit of the moment.
    t.sent.foreach { s =>
      assert(s.inFlightBefore == 0 || s.inFlightBefore <= s.limit - 100, s)
      assert(s.inFlightBefore == 0 || s.inFlightBefore + s.size <= s.limit, s)
    }
  }

  test("elastic limit disabled: the limit stays at the hard limit") {
    val (t, waited) = elasticRun(elastic = false)
    assert(waited.count(identity) > 0)
    assert(t.limits.forall(_ === 1000))
    val c = t.counters
    assert(c(FetchCounters.LimitMin) === 1000)
    assert(c(FetchCounters.LimitMax) === 1000)
    assert(c(FetchCounters.LimitChanges) === 0)
    assert(c.toMap("elastic_limit_mean") === 1000.0)
  }

  test("the increment aggregates small blocks up to itself and never splits one") {
    for (order <- Seq("adaptive", "pairwise", "naive")) withClue(order) {
      val sizes = Seq(30, 30, 30, 30, 30, 30, 30, 500, 30, 30, 30, 30, 100, 30)
      val layout = Seq(exec("1") -> sizes.zipWithIndex.map { case (sz, m) => blk(9, m, sz) })
      val t = new SimTask(exec("0"), layout, settings(order, limit = 10000, increment = 100))
      t.readAll()
      t.assertEachOnce()
      // Naive sends its planned requests in random order: compare them in map order.
      val requestSizes = t.calls
        .map(_.blockIds.map(n => t.blocks(("1", n))))
        .sortBy(_.head.mapIndex)
        .map(_.map(_.declaredSize))
      // In map order: three small blocks fill the increment (a fourth would exceed it); the big
      // block goes alone; the tail goes when the source runs out.
      assert(
        requestSizes === Seq(
          Seq(30, 30, 30),
          Seq(30, 30, 30),
          Seq(30),
          Seq(500),
          Seq(30, 30, 30),
          Seq(30),
          Seq(100),
          Seq(30)))
      requestSizes.foreach(r => assert(r.sum <= 100 || r.size == 1))
      t.finish()
    }
    // A block larger than the increment goes alone; so does one the next would overfill.
    val big = Seq(exec("1") -> Seq(blk(9, 100, 700), blk(9, 101, 40), blk(9, 102, 70)))
    val t = new SimTask(exec("0"), big, settings("adaptive", limit = 10000, increment = 100))
    assert(t.calls.map(_.blockIds.size) === Seq(1, 1, 1))
    t.finish()
  }

  test("send rule: bytes in flight never exceed the limit, except by a request sent alone") {
    val random = new Random(22L)
    for (round <- 0 until 80; order <- Seq("adaptive", "pairwise")) {
      val elastic = round % 2 == 0
      // Every other round each source's blocks divide the increment; otherwise any sizes.
      val aligned = round % 4 < 2
      val inc = if (aligned) 60L * (1 + random.nextInt(4)) else 1L + random.nextInt(250)
      val limit = inc * (1 + random.nextInt(6))
      val layout =
        Seq("1", "2", "3", "4").take(1 + random.nextInt(4)).zipWithIndex.map { case (id, i) =>
          val size = (inc / (1 + random.nextInt(6))).toInt
          exec(id) -> (0 until random.nextInt(12)).map { m =>
            blk(10 + round, i * 100L + m, if (aligned) size else 1 + random.nextInt(300))
          }
        }
      withClue(s"round $round, $order, elastic=$elastic, inc $inc, limit $limit: ") {
        val task = new SimTask(
          exec("0"),
          layout,
          settings(order, elastic, limit = limit, increment = inc),
          hold = _ => random.nextBoolean())
        while (task.fetcher.hasNext) {
          task.releaseSome(random)
          task.readOne()
        }
        task.assertEachOnce()
        task.sent.foreach { s =>
          assert(s.limit <= limit && s.limit >= inc)
          assert(s.inFlightBefore == 0 || s.inFlightBefore + s.size <= s.limit, s)
          // Cut to the increment: a request passes it by less than a block.
          val largest =
            s.call.blockIds.map(n => task.blocks((s.call.address.executorId, n)).declaredSize).max
          assert(s.size - largest < inc, s)
        }
        task.finish()
        task.assertNoLeak()
      }
    }
  }

  test("pairwise: one source at a time, in rank order, the next once the previous is consumed") {
    val ids = Seq("0", "1", "2", "3")
    val layout = ids.filter(_ != "1").zipWithIndex.map { case (id, i) =>
      exec(id) -> (0 until 5).map(m => blk(60, i * 100L + m, 60))
    }
    val random = new Random(4L)
    val task = new SimTask(
      exec("1"),
      layout,
      settings("pairwise", limit = 300, increment = 100),
      hold = _ => random.nextBoolean())
    while (task.fetcher.hasNext) {
      task.releaseSome(random)
      task.readOne()
    }
    task.assertEachOnce()
    // Executor 1 of 0..3: steps ask ranks 0, 3, 2.
    assert(sources(task).distinct === Seq("0", "3", "2"))
    val namesOf = layout.map { case (a, bs) => a.executorId -> bs.map(_.id.toString).toSet }.toMap
    task.sent.foreach { s =>
      val source = s.call.address.executorId
      val consumedThen = task.consumed.take(s.consumedBefore).toSet
      val earlier = sources(task).takeWhile(_ != source).distinct
      earlier.foreach { e =>
        assert(namesOf(e).subsetOf(consumedThen), s"$source asked before $e was consumed")
      }
    }
    task.finish()
    task.assertNoLeak()
  }

  test("a source failing mid-request: FetchFailedException for that block, no block twice") {
    for ((order, elastic) <- AllOrders) withClue(s"$order, elastic=$elastic: ") {
      val layout = Seq("1", "2", "3").zipWithIndex.map { case (id, i) =>
        exec(id) -> (0 until 4).map(m => blk(70, i * 100L + m, 50))
      }
      val victim = layout(1)._2(1)
      val cause = new IOException("connection reset")
      // Exec 2 sends the blocks of the victim's request before it, then fails on the victim.
      val t = new SimTask(
        exec("0"),
        layout,
        settings(order, elastic, limit = 300, increment = 100),
        hold = _ => true,
        failBlocks = Map(victim.id.toString -> cause))
      val e = intercept[FetchFailedException] {
        while (t.fetcher.hasNext) {
          t.releaseHeld()
          t.readOne()
        }
      }
      assert(t.delivered.contains(victim.id.toString))
      val reason = e.toTaskFailedReason.asInstanceOf[FetchFailed]
      assert(reason.bmAddress === exec("2"))
      assert((reason.shuffleId, reason.mapId, reason.reduceId) === ((70, victim.id.mapId, 0)))
      assert(e.getCause eq cause)
      assert(!t.consumed.contains(victim.id.toString))
      assert(t.consumed.distinct.size === t.consumed.size)
      val requested = t.calls.flatMap(_.blockIds)
      assert(requested.distinct.size === requested.size, requested)
      t.finish()
      t.assertNoLeak()
    }
  }
}
