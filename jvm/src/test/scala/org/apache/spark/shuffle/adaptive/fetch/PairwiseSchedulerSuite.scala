package org.apache.spark.shuffle.adaptive.fetch

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import AdaptiveFetchTestKit.{exec, settings}
import SchedulerTestState.{drain, refs}
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, FlowSettings}

class PairwiseSchedulerSuite extends AnyFunSuite {

  private def pairwise(
      self: String,
      remote: Seq[(String, Seq[Long])],
      s: FlowSettings): PairwiseScheduler =
    new PairwiseScheduler(
      s,
      exec(self),
      remote.zipWithIndex.map { case ((id, sizes), i) =>
        exec(id) -> refs(2, i * 1000, sizes)
      })

  /**
   * Runs the scheduler to the end, consuming the oldest request after each round; returns each
   * request's source with the sources whose blocks were not all consumed when it was sent.
   */
  private def run(
      scheduler: PairwiseScheduler,
      state: SchedulerTestState): Seq[(String, Set[String])] = {
    val out = mutable.ArrayBuffer.empty[(String, Set[String])]
    def round(): Unit = {
      var next = scheduler.next(state)
      while (next.isDefined) {
        val openSources = state.openBlocks.map(id => id.mapId / 1000).toSet
        out += next.get.address.executorId -> openSources.map(_.toString)
        state.send(next.get)
        next = scheduler.next(state)
      }
    }
    round()
    while (state.openBlocks.nonEmpty) {
      state.consumeOldest()
      round()
    }
    out.toSeq
  }

  test("step k asks only rank (i - k) mod n; the next source only after the previous is consumed") {
    val s = settings("pairwise", limit = 300, increment = 100)
    val ids = (0 until 5).map(_.toString)
    for (i <- ids.indices) {
      val self = ids(i)
      // Map ids encode the source's position in `remote`, used to tell sources apart.
      val remote = ids.filter(_ != self).map(_ -> Seq.fill(4)(100L))
      val position = remote.map(_._1).zipWithIndex.toMap
      val state = new SchedulerTestState(300, null)
      val sent = run(pairwise(self, remote, s), state)
      val expectedSteps =
        (1 until ids.size).map(k => ids(((i - k) % ids.size + ids.size) % ids.size))
      withClue(s"on executor $self: $sent") {
        // Requests go to one source at a time, in the pairwise order...
        assert(sent.map(_._1).distinct === expectedSteps)
        assert(sent.map(_._1) === expectedSteps.flatMap(id => Seq.fill(4)(id)))
        // ...and a source is first asked only when nothing of an earlier one is in flight.
        sent.foreach { case (source, open) =>
          assert(open.forall(_ == position(source).toString), s"$source asked while $open open")
        }
      }
      assert(state.openBlocks.isEmpty)
    }
  }

  test("within a step requests follow the increment rule and use the limit") {
    val s = settings("pairwise", limit = 300, increment = 100)
    val state = new SchedulerTestState(300, null)
    val scheduler = pairwise("1", Seq("0" -> Seq.fill(10)(50L), "2" -> Seq(10L)), s)
    val first = drain(scheduler, state)
    // Three requests of two blocks (one increment each) leave at once, all to rank 0.
    assert(first.map(r => r.address.executorId -> r.blocks.size) === Seq.fill(3)("0" -> 2))
    state.consumeOldest()
    assert(drain(scheduler, state).map(_.size) === Seq(100L))
  }

  test("executors without blocks are skipped; every block is requested once") {
    val s = settings("pairwise", limit = 1000, increment = 100)
    val remote = Seq("3" -> Seq(30L, 80L), "1" -> Seq(500L), "2" -> Seq(100L, 1L, 1L))
    val scheduler = new PairwiseScheduler(
      s,
      exec("0"),
      remote.zipWithIndex.map { case ((id, sizes), i) =>
        exec(id) -> refs(3, i * 1000, sizes)
      } :+ (exec("4") -> IndexedSeq.empty[BlockRef]))
    val state = new SchedulerTestState(1000, null)
    val all = mutable.ArrayBuffer.empty[BlockBatch[FetchItem]] ++= drain(scheduler, state)
    while (state.openBlocks.nonEmpty) {
      state.consumeOldest()
      all ++= drain(scheduler, state)
    }
    // Executor 0 of 0..4: ranks 4 (no blocks), 3, 2, 1.
    assert(all.map(_.address.executorId).distinct === Seq("3", "2", "1"))
    assert(all.flatMap(_.blocks.map(_.size)).sorted === Seq(1L, 1L, 30L, 80L, 100L, 500L))
    assert(all.flatMap(_.blocks.map(_.blockId)).distinct.size === 6)
  }
}
