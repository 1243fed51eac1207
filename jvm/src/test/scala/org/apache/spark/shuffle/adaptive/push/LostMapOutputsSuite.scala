package org.apache.spark.shuffle.adaptive.push

import org.roaringbitmap.longlong.Roaring64NavigableMap
import org.scalatest.funsuite.AnyFunSuite

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
}
