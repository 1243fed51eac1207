package org.apache.spark.shuffle.adaptive.push.driver

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.Success
import org.apache.spark.executor.ExecutorMetrics
import org.apache.spark.scheduler.{SparkListenerStageCompleted, SparkListenerStageSubmitted, SparkListenerTaskEnd}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.ThreadUtils
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

class OwnerPlacementSuite extends AnyFunSuite {

  private val executors = Seq("0", "1", "2").map(id => BlockManagerId(id, s"host-$id", 7000))

  /**
   * A placement of shuffles of `partitions` partitions whose map outputs predict `sizes`, placed
   * after their first map task; `tables` holds each shuffle's versions as published.
   */
  private final class Placing(sizes: Map[Int, Array[Long]], partitions: Int = 6) {
    val tables = mutable.Map.empty[Int, Vector[OwnerTable]]
    var predictions = 0
    val placement = new OwnerPlacement(
      0.1,
      (id, _) => {
        predictions += 1
        sizes.getOrElse(id, Array.fill(partitions)(0L))
      },
      (id, table) => tables(id) :+= table,
      ThreadUtils.sameThreadExecutorService())

    def register(shuffleId: Int, owners: Seq[BlockManagerId] = executors): Unit = {
      tables(shuffleId) = Vector(TableArithmetic.uniform(partitions, owners))
      placement.register(shuffleId, 4, partitions, () => tables.get(shuffleId).map(_.last))
    }

    def mapStageCompleted(shuffleId: Int): Unit =
      placement.onStageCompleted(SparkListenerStageCompleted(stageInfo(shuffleId)))

    /** Shuffle `shuffleId`'s map stage (stage id = shuffle id) runs its first task. */
    def firstMapTask(shuffleId: Int): Unit = {
      placement.onStageSubmitted(SparkListenerStageSubmitted(stageInfo(shuffleId)))
      mapTaskEnds(shuffleId)
    }

    private def stageInfo(shuffleId: Int) = StageInfos.of(shuffleId, shuffle = Some(shuffleId))

    /** `count` more map tasks of shuffle `shuffleId`'s stage succeed. */
    def mapTaskEnds(shuffleId: Int, count: Int = 1): Unit = (1 to count).foreach { _ =>
      placement.onTaskEnd(
        SparkListenerTaskEnd(
          shuffleId,
          0,
          "ShuffleMapTask",
          Success,
          null,
          new ExecutorMetrics,
          null))
    }

    def layout(shuffleId: Int): Seq[(String, Int)] = {
      val table = tables(shuffleId).last
      table.owners.map(_.executorId).zip(table.firstPartition)
    }
  }

  private val skewed = Array(50L, 30L, 5L, 5L, 5L, 5L)

  test("a shuffle alone is placed again by its own sizes") {
    val p = new Placing(Map(1 -> skewed))
    p.register(1)
    p.firstMapTask(1)
    assert(p.tables(1).size === 2)
    assert(p.layout(1) === Seq(("0", 0), ("1", 1), ("2", 2)))
  }

  test("co-partitioned shuffles get one table, chosen by their sizes together") {
    // Alone, shuffle 2's even sizes would keep equal ranges; with shuffle 1's, a join reads the
    // first partitions' bytes of both.
    val p = new Placing(Map(1 -> skewed, 2 -> Array.fill(6)(5L)))
    p.register(1)
    p.register(2)
    p.placement.coPartitioned(1, key = 7)
    p.placement.coPartitioned(2, key = 7)
    p.firstMapTask(1)
    assert(p.layout(1) === Seq(("0", 0), ("1", 1), ("2", 2)))
    assert(p.layout(2) === p.layout(1), "the other side took the chosen table at once")
    assert(p.tables(2).last.version === 1)
    // Its own map stage then changes nothing.
    p.firstMapTask(2)
    assert(p.tables(2).size === 2 && p.tables(1).size === 2)
  }

  test("a shuffle that joins a group after its table was chosen takes it") {
    val p = new Placing(Map(1 -> skewed))
    p.register(1)
    p.placement.coPartitioned(1, key = 3)
    p.firstMapTask(1)
    p.register(2)
    p.placement.coPartitioned(2, key = 3)
    assert(p.layout(2) === p.layout(1))
    // Another key is another group: shuffle 4 is placed by its own sizes (none yet).
    p.register(4)
    p.placement.coPartitioned(4, key = 5)
    p.firstMapTask(4)
    assert(p.tables(4).size === 1)
  }

  test("a group that keeps equal ranges keeps them for every side") {
    val p = new Placing(Map(1 -> Array.fill(6)(5L), 2 -> skewed.map(_ / 100)))
    p.register(1)
    p.register(2)
    p.placement.coPartitioned(1, key = 9)
    p.placement.coPartitioned(2, key = 9)
    p.firstMapTask(1)
    p.firstMapTask(2)
    assert(p.tables(1).size === 1 && p.tables(2).size === 1)
  }

  test("shuffles of other partition counts in a group are left alone; removed ones leave it") {
    val p = new Placing(Map(1 -> skewed))
    p.register(1)
    p.placement.register(8, 4, 3, () => Some(TableArithmetic.uniform(3, executors)))
    p.placement.coPartitioned(1, key = 2)
    p.placement.coPartitioned(8, key = 2)
    p.firstMapTask(1)
    assert(p.layout(1) === Seq(("0", 0), ("1", 1), ("2", 2)))
    assert(!p.tables.contains(8))
    p.placement.remove(1)
    p.placement.remove(8)
    p.register(1)
    p.placement.coPartitioned(1, key = 2)
    assert(p.tables(1).size === 1, "the group went with its last member")
  }

  test("a stage whose sizes stay unknown is tried again for as many task ends as it waited") {
    // Placed after 1 of 4 map tasks: tried at the first task's end and at the second's, no more.
    val p = new Placing(Map.empty)
    p.register(1)
    p.firstMapTask(1)
    p.mapTaskEnds(1, count = 3)
    assert(p.predictions === 2 && p.tables(1).size === 1)
  }

  test("an executor that starts running tasks before a shuffle's map stage ends becomes an owner") {
    // Placed when only executor 0's block manager had registered: it owned every partition.
    val p = new Placing(Map.empty)
    p.register(1, executors.take(1)) // mapping when executor 1 joins
    p.register(2, executors.take(1)) // mapped already
    p.register(3, executors.take(1)) // its map stage not submitted yet
    p.firstMapTask(1)
    p.firstMapTask(2)
    p.mapStageCompleted(2)
    p.placement.joined(executors(1))
    assert(p.layout(1) === Seq(("0", 0), ("1", 3)))
    assert(p.tables(1).last.version === 1)
    assert(p.layout(3) === Seq(("0", 0), ("1", 3)))
    assert(p.layout(2) === Seq(("0", 0)), "a shuffle already mapped keeps its owners")
    // Replicated, executor 0's own map outputs now have an executor to be held by.
    assert(p.tables(1).head.replicaOf(executors(0)).isEmpty)
    assert(p.tables(1).last.replicaOf(executors(0)) === Some(executors(1)))
    p.placement.joined(executors(1))
    p.placement.joined(executors(0))
    assert(p.tables(1).size === 2, "an owner already is not added again")
  }
}
