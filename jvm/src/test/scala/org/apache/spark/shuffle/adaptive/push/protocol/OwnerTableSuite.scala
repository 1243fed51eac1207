package org.apache.spark.shuffle.adaptive.push.protocol

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.push.driver.{OwnerPlacement, TableArithmetic}
import org.apache.spark.shuffle.adaptive.push.map.Pusher

class OwnerTableSuite extends AnyFunSuite {

  private def executors(ids: String*) = ids.map(id => BlockManagerId(id, s"host-$id", 7000))

  private def rangesOf(table: OwnerTable): Seq[(String, Int, Int)] =
    table.ranges(0, table.numPartitions).map { case (o, from, until) =>
      (o.executorId, from, until)
    }

  test("equal contiguous ranges over the executors in their circular order") {
    val table = TableArithmetic.uniform(10, executors("10", "2", "1"))
    assert(rangesOf(table) === Seq(("1", 0, 3), ("2", 3, 6), ("10", 6, 10)))
  }

  test("a partition larger than a share is an owner's alone; the rest share what is left") {
    val predicted = Array(1.0, 1.0, 30.0, 1.0, 1.0, 1.0, 1.0)
    val table = TableArithmetic.balanced(predicted, executors("0", "1", "2"))
    assert(rangesOf(table) === Seq(("0", 0, 2), ("1", 2, 3), ("2", 3, 7)))
  }

  test("fewer partitions than executors: one each, the other executors own nothing") {
    assert(
      rangesOf(TableArithmetic.uniform(2, executors("0", "1", "2"))) === Seq(
        ("0", 0, 1),
        ("1", 1, 2)))
    assert(TableArithmetic.uniform(3, Nil).isEmpty)
    assert(TableArithmetic.uniform(3, Nil).ranges(0, 3).isEmpty)
  }

  test("the owners of a range, with the part each owns") {
    val table = TableArithmetic.uniform(9, executors("0", "1", "2"))
    assert(
      table.ranges(2, 7).map { case (o, f, u) => (o.executorId, f, u) } ===
        Seq(("0", 2, 3), ("1", 3, 6), ("2", 6, 7)))
    assert(table.ranges(4, 5).map(_._1.executorId) === Seq("1"))
  }

  test("a reduce task asks each owner of any version for what it owns in any, joined") {
    val v0 = TableArithmetic.uniform(9, executors("0", "1", "2"))
    val v1 = TableArithmetic
      .balanced(Array(9, 1, 1, 1, 1, 1, 1, 1, 1), executors("0", "1", "2"))
      .copy(version = 1)
    assert(rangesOf(v1) === Seq(("0", 0, 1), ("1", 1, 5), ("2", 5, 9)))
    assert(
      OwnerTable.ranges(Seq(v0, v1), 0, 9).map { case (o, f, u) => (o.executorId, f, u) } ===
        Seq(("0", 0, 3), ("1", 1, 6), ("2", 5, 9)))
    assert(
      OwnerTable.ranges(Seq(v0, v1), 4, 6).map { case (o, f, u) => (o.executorId, f, u) } ===
        Seq(("1", 4, 6), ("2", 5, 6)))
  }

  test("placed again by size only where that lowers the largest share by a tenth") {
    val v0 = TableArithmetic.uniform(6, executors("0", "1", "2"))
    val skewed = Array(50L, 30L, 5L, 5L, 5L, 5L)
    val v1 = OwnerPlacement.next(v0, skewed).get
    assert(v1.version === 1 && rangesOf(v1) === Seq(("0", 0, 1), ("1", 1, 2), ("2", 2, 6)))
    assert(TableArithmetic.maxLoad(v1, skewed.map(_.toDouble)) === 50.0)
    assert(TableArithmetic.maxLoad(v0, skewed.map(_.toDouble)) === 80.0)
    // Uniform sizes: equal ranges are already balanced.
    assert(OwnerPlacement.next(v0, Array.fill(6)(10L)).isEmpty)
    // Nothing known yet, or sizes of another shape: no new version.
    assert(OwnerPlacement.next(v0, Array.fill(6)(0L)).isEmpty)
    assert(OwnerPlacement.next(v0, Array(1L)).isEmpty)
    // An owner the driver lost is not placed again.
    val lost = OwnerPlacement.next(v0.keepingOnly(Set("0", "2")), skewed).get
    assert(lost.owners.map(_.executorId) === Seq("0", "2"))
    assert(OwnerPlacement.after(0.1, 80) === 8 && OwnerPlacement.after(0.01, 10) === 1)
  }

  test("a hot partition gets an owner of its own even where the largest share hardly drops") {
    // 256 partitions on 4 owners, one holding 2000 of 2765 bytes (α = 2's shape): alone, its
    // owner merges 2000 bytes instead of 2189, less than a tenth less.
    val predicted = Array.tabulate(256)(p => if (p == 93) 2000L else 3L)
    val sizes = predicted.map(_.toDouble)
    val v0 = TableArithmetic.uniform(256, executors("0", "1", "2", "3"))
    assert(
      TableArithmetic.besideOversized(v0, sizes) === 189.0 && TableArithmetic
        .maxLoad(v0, sizes) === 2189.0)
    val v1 = OwnerPlacement.next(v0, predicted).get
    assert(rangesOf(v1).find(_._1 == "1").contains(("1", 93, 94)))
    assert(
      TableArithmetic
        .besideOversized(v1, sizes) === 0.0 && TableArithmetic.maxLoad(v1, sizes) / TableArithmetic
        .maxLoad(v0, sizes) > 0.9)
    // Without an oversized partition, nothing is held besides one.
    assert(TableArithmetic.besideOversized(v0, Array.fill(256)(1.0)) === 0.0)
  }

  test("an executor's pusher takes the newest table the driver sent over the one it carries") {
    val v0 = TableArithmetic.uniform(6, executors("0", "1"))
    val v1 = v0.copy(firstPartition = Vector(0, 1), version = 1)
    val v2 = v0.copy(firstPartition = Vector(0, 4), version = 2)
    val tables = new OwnerTableUpdates
    assert(tables.newestOf(3, v0) eq v0)
    tables.update(3, PushPayloads.decodeTable(PushPayloads.encodeTable(v2)))
    tables.update(3, v1) // late: older than what is held
    assert(tables.newestOf(3, v0) === v2 && tables.newestOf(4, v0) === v0)
    // A rerun map stage's tasks carry the newest version already.
    assert(tables.newestOf(3, v2.copy(version = 3)).version === 3)
    tables.remove(3)
    assert(tables.newestOf(3, v0) eq v0)
  }

  test(
    "replicated: an owner's own partitions go to the next owner not lost, and readers ask both " +
      "the owners and the replicas, lost owners' replicas included") {
    val all = executors("0", "1", "2")
    val table = TableArithmetic.uniform(9, all)
    assert(all.map(table.replicaOf(_).map(_.executorId)) === Seq(Some("1"), Some("2"), Some("0")))
    assert(table.replicaOf(BlockManagerId("9", "host-9", 7000)).isEmpty)
    assert(TableArithmetic.uniform(9, executors("0")).replicaOf(all.head).isEmpty)
    def holders(t: OwnerTable, replicated: Boolean) =
      t.holders(2, 7, replicated).map { case (o, f, u) => (o.executorId, f, u) }
    assert(holders(table, replicated = false) === Seq(("0", 2, 3), ("1", 3, 6), ("2", 6, 7)))
    assert(
      holders(table, replicated = true) === Seq(
        ("0", 2, 3),
        ("1", 3, 6),
        ("2", 6, 7),
        ("1", 2, 3),
        ("2", 3, 6),
        ("0", 6, 7)))
    val lost1 = table.keepingOnly(Set("0", "2"))
    assert(lost1.replicaOf(all.head).map(_.executorId) === Some("2"))
    assert(
      holders(lost1, replicated = true) === Seq(
        ("0", 2, 3),
        ("2", 6, 7),
        ("2", 2, 3),
        ("2", 3, 6),
        ("0", 6, 7)))
    // Joined per holder across versions, as a reduce task asks them.
    assert(OwnerTable.ranges(Seq(lost1), 0, 9, replicated = true).map { case (o, f, u) =>
      (o.executorId, f, u)
    } === Seq(("0", 0, 3), ("0", 6, 9), ("2", 0, 9)))
  }

  test(
    "replicated: a map output sends its own executor's partitions to the replica, joined with " +
      "the replica's own range; without it, every range to its owner") {
    val all = executors("0", "1", "2")
    val table = TableArithmetic.uniform(9, all)
    def targets(self: Int, replicated: Boolean) =
      Pusher.targets(table, all(self), replicated).map { case (t, rs) =>
        t.executorId -> rs
      }
    assert(
      targets(1, replicated = false) === Seq(
        "0" -> Seq((0, 3)),
        "1" -> Seq((3, 6)),
        "2" -> Seq((6, 9))))
    assert(targets(1, replicated = true) === Seq("0" -> Seq((0, 3)), "2" -> Seq((3, 6), (6, 9))))
  }
}
