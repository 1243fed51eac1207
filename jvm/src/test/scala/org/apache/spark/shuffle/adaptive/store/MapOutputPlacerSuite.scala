package org.apache.spark.shuffle.adaptive.store

import org.scalatest.funsuite.AnyFunSuite

class MapOutputPlacerSuite extends AnyFunSuite {

  test("a map output's blocks are grouped into runs of neighbours with the same holder") {
    val blocks = Seq(0 -> "a", 1 -> "a", 3 -> "b", 4 -> "", 5 -> "c", 7 -> "c", 8 -> "b")
    assert(
      MapOutputPlacer.runs(blocks) ===
        Seq("a" -> (0, 1), "b" -> (3, 3), "" -> (4, 4), "c" -> (5, 7), "b" -> (8, 8)))
    assert(MapOutputPlacer.runs(Seq.empty[(Int, String)]).isEmpty)
  }

  test("a map output's non-empty blocks, from its index offsets") {
    assert(MapOutputPlacer.blocks(Array(0L, 10, 10, 25, 25)) === IndexedSeq(0 -> 10L, 2 -> 15L))
    assert(MapOutputPlacer.blocks(Array(0L)).isEmpty)
  }
}
