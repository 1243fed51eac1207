package org.apache.spark.shuffle.adaptive.push.driver

import org.roaringbitmap.longlong.Roaring64NavigableMap
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{MapOutputTrackerMaster, SparkConf}
import org.apache.spark.broadcast.BroadcastManager
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable

class LostMapOutputsSuite extends AnyFunSuite {

  private def maps(ids: Long*): Roaring64NavigableMap = {
    val bitmap = new Roaring64NavigableMap
    ids.foreach(bitmap.addLong)
    bitmap
  }

  test("a lost map output is rerun when a non-empty block of it is merged nowhere") {
    // Three partitions; map ids 10, 11, 12 at indices 0, 1, 2.
    val merged = Array(maps(10, 11, 12), maps(10, 12), null)
    val sizes: Map[Long, Seq[Long]] = Map(
      10L -> Seq(5, 5, 0), // every non-empty block merged
      11L -> Seq(5, 5, 0), // partition 1's block merged nowhere
      12L -> Seq(5, 0, 7)
    ) // partition 2 merged nothing at all
    val lost = Seq(10L, 11L, 12L).zipWithIndex.map { case (id, index) =>
      (index, id, (p: Int) => sizes(id)(p))
    }
    assert(LostMapOutputs.notHeld(lost, merged) === Seq(1, 2))
    assert(LostMapOutputs.notHeld(lost.take(1), merged).isEmpty)
    // Empty map outputs hold nothing to lose.
    assert(LostMapOutputs.notHeld(Seq((0, 13L, (_: Int) => 0L)), merged).isEmpty)
  }

  test(
    "a lost executor's map outputs merged nowhere are unregistered, the rest kept; a removal " +
      "announced twice is checked once; outputs kept at one loss are checked again at the next") {
    val conf = new SparkConf()
    val tracker = new MapOutputTrackerMaster(conf, new BroadcastManager(true, conf), true)
    try {
      val (lostHere, elsewhere) =
        (BlockManagerId("1", "host1", 7001), BlockManagerId("2", "host2", 7002))
      tracker.registerShuffle(5, 3, 2)
      // Map 100 (index 0) is merged everywhere; map 101 (index 1) not in partition 1.
      tracker.registerMapOutput(5, 0, MapStatus(lostHere, Array(10L, 10L), 100L))
      tracker.registerMapOutput(5, 1, MapStatus(lostHere, Array(10L, 10L), 101L))
      tracker.registerMapOutput(5, 2, MapStatus(elsewhere, Array(10L, 10L), 102L))
      val table = OwnerTable(2, Vector(lostHere, elsewhere), Vector(0, 1))
      var gathered = 0
      var alive = Set("1", "2")
      val lost = new LostMapOutputs(
        () => Map(5 -> Seq(table)),
        () => alive,
        (_, tables) => {
          gathered += 1
          // The live holders' bitmaps; none once executor 2 is lost too.
          if (tables.head.lost("2")) Array(null, null)
          else {
            assert(tables.map(_.lost) === Seq(Set("1")), "would ask the lost executor")
            Array(maps(100, 101, 102), maps(100, 102))
          }
        },
        tracker)
      alive = Set("2")
      lost.executorLost("1")
      lost.executorLost("1")
      assert(gathered === 1)
      val locations = tracker.shuffleStatuses(5).mapStatuses.map(Option(_).map(_.location))
      assert(locations.toSeq === Seq(Some(lostHere), None, Some(elsewhere)))
      assert(
        lost.counts === Map(
          "executors_lost" -> 1L,
          "map_outputs_kept" -> 1L,
          "map_outputs_rerun" -> 1L))

      // Losing executor 2 loses what only it held of map 100, kept above, and all of map 102.
      lost.executorLost("2")
      assert(
        tracker.shuffleStatuses(5).mapStatuses.forall(_ == null),
        "map outputs of executors lost before are checked again")
      assert(
        lost.counts === Map(
          "executors_lost" -> 2L,
          "map_outputs_kept" -> 1L,
          "map_outputs_rerun" -> 3L))
      lost.stop()
    } finally tracker.stop()
  }
}
