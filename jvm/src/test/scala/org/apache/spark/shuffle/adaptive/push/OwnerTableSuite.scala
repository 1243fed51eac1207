package org.apache.spark.shuffle.adaptive.push

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.BlockManagerId

class OwnerTableSuite extends AnyFunSuite {

  private def executors(ids: String*) = ids.map(id => BlockManagerId(id, s"host-$id", 7000))

  private def rangesOf(table: OwnerTable): Seq[(String, Int, Int)] =
    table.ranges(0, table.numPartitions).map { case (o, from, until) =>
      (o.executorId, from, until)
    }

  test("equal contiguous ranges over the executors in their circular order") {
    val table = OwnerTable.uniform(10, executors("10", "2", "1"))
    assert(rangesOf(table) === Seq(("1", 0, 3), ("2", 3, 6), ("10", 6, 10)))
  }

  test("a partition larger than a share is an owner's alone; the rest share what is left") {
    val predicted = Array(1.0, 1.0, 30.0, 1.0, 1.0, 1.0, 1.0)
    val table = OwnerTable.balanced(predicted, executors("0", "1", "2"))
    assert(rangesOf(table) === Seq(("0", 0, 2), ("1", 2, 3), ("2", 3, 7)))
  }

  test("fewer partitions than executors: one each, the other executors own nothing") {
    assert(
      rangesOf(OwnerTable.uniform(2, executors("0", "1", "2"))) === Seq(("0", 0, 1), ("1", 1, 2)))
    assert(OwnerTable.uniform(3, Nil).isEmpty)
    assert(OwnerTable.uniform(3, Nil).ranges(0, 3).isEmpty)
  }

  test("the owners of a range, with the part each owns") {
    val table = OwnerTable.uniform(9, executors("0", "1", "2"))
    assert(
      table.ranges(2, 7).map { case (o, f, u) => (o.executorId, f, u) } ===
        Seq(("0", 2, 3), ("1", 3, 6), ("2", 6, 7)))
    assert(table.ranges(4, 5).map(_._1.executorId) === Seq("1"))
  }
}
