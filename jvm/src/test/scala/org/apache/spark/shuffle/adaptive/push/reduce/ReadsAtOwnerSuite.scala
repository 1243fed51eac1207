package org.apache.spark.shuffle.adaptive.push.reduce

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

class ReadsAtOwnerSuite extends AnyFunSuite {

  private def task(self: String, served: (String, Long)*): FetchCounters = {
    val counters = new FetchCounters
    served.foreach { case (holder, bytes) =>
      counters.servedFromStore(holder, bytes, crossedTwice = false)
    }
    ReadsAtOwner.count(counters, self)
    counters
  }

  private def counts(c: FetchCounters) = (
    c(FetchCounters.StoredReduceTasks),
    c(FetchCounters.StoredReduceTasksOnOwner),
    c(FetchCounters.BytesAtOwner))

  test("a task at the executor that held most of its merged bytes ran at their owner") {
    assert(counts(task("e1", "e1" -> 100L, "e2" -> 50L)) === ((1L, 1L, 100L)))
    assert(counts(task("e2", "e1" -> 100L, "e2" -> 50L)) === ((1L, 0L, 50L)))
    assert(counts(task("e3", "e1" -> 100L)) === ((1L, 0L, 0L)))
    // A tie goes to the task's own executor.
    assert(counts(task("e2", "e1" -> 50L, "e2" -> 50L)) === ((1L, 1L, 50L)))
  }

  test("a task that read no merged chunk is not counted") {
    assert(counts(task("e1")) === ((0L, 0L, 0L)))
  }
}
