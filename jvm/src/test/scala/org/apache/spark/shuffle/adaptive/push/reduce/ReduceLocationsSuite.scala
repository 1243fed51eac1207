package org.apache.spark.shuffle.adaptive.push.reduce

import org.apache.spark.SparkFunSuite
import org.apache.spark.scheduler.{ExecutorCacheTaskLocation, TaskLocation}
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

class ReduceLocationsSuite extends SparkFunSuite {

  private val a = BlockManagerId("1", "host-a", 7001)
  private val b = BlockManagerId("2", "host-b", 7002)
  // a owns partitions 0 to 3, b 4 to 9.
  private val table = OwnerTable(10, Vector(a, b), Vector(0, 4))
  private val noBytes: Int => Long = _ => fail("bytes asked for a range of one owner")

  private def at(owner: BlockManagerId) =
    Seq(ExecutorCacheTaskLocation(owner.host, owner.executorId).toString)

  test("a partition, or a range of one owner, prefers that owner, as a process-local location") {
    assert(ReduceLocations.of(table, 2, 3, noBytes) === at(a))
    assert(ReduceLocations.of(table, 4, 10, noBytes) === at(b))
    assert(
      TaskLocation(ReduceLocations.of(table, 0, 1, noBytes).head) ===
        ExecutorCacheTaskLocation("host-a", "1"))
  }

  test("a range over several owners prefers the one holding most of its bytes") {
    val bytes = Array[Long](1, 1, 1, 50, 10, 10, 10, 10, 10, 10)
    assert(ReduceLocations.of(table, 2, 6, bytes(_)) === at(a)) // 51 at a, 20 at b
    assert(ReduceLocations.of(table, 3, 10, bytes(_)) === at(b)) // 50 at a, 60 at b
  }

  test("a lost owner's partitions get no preference; its range's live part goes to the other") {
    val lost = table.keepingOnly(Set("2"))
    assert(ReduceLocations.of(lost, 0, 4, noBytes) === Nil)
    assert(ReduceLocations.of(lost, 2, 6, noBytes) === at(b))
    assert(ReduceLocations.of(OwnerTable.empty(10), 0, 10, noBytes) === Nil)
  }
}
