package org.apache.spark.shuffle.adaptive.push

import org.scalatest.funsuite.AnyFunSuite

class PushPlanSuite extends AnyFunSuite {

  test("owners follow the predicted sizes until a partition is pinned") {
    val plan = new PushPlan(numMaps = 4, numPartitions = 2)
    assert(plan.ownersAmong(Nil).isEmpty)
    plan.observe(Array(0, 1), Array(10, 20))
    assert(plan.ownersAmong(Seq("a", "b")).get.toSeq === Seq("b", "a"))
    plan.pin(1, "a")
    plan.observe(Array(0), Array(1000))
    // Partition 0 now predicts largest but partition 1 stays on a: 0 goes to the lighter b.
    assert(plan.ownersAmong(Seq("a", "b")).get.toSeq === Seq("b", "a"))
    plan.pin(0, "b")
    plan.pin(0, "a")
    assert(plan.pinnedOwners === Map(0 -> "b", 1 -> "a"), "the first pin holds")
  }

  test("an executor lost unpins its partitions") {
    val plan = new PushPlan(numMaps = 1, numPartitions = 2)
    plan.observe(Array(0, 1), Array(10, 20))
    plan.pin(0, "b")
    plan.pin(1, "a")
    plan.executorLost("b")
    assert(plan.pinnedOwners === Map(1 -> "a"))
    assert(plan.ownersAmong(Seq("a", "c")).get.toSeq === Seq("c", "a"))
  }
}
