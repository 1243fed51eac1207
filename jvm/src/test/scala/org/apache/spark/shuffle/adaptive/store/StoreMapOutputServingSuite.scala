package org.apache.spark.shuffle.adaptive.store

import org.scalatest.funsuite.AnyFunSuite

class StoreMapOutputServingSuite extends AnyFunSuite {

  test("a map output's blocks are grouped into runs of neighbours with the same holder") {
    val blocks = Seq(0 -> "a", 1 -> "a", 3 -> "b", 4 -> "", 5 -> "c", 7 -> "c", 8 -> "b")
    assert(StoreMapOutputServing.runs(blocks) ===
      Seq("a" -> (0, 1), "b" -> (3, 3), "" -> (4, 4), "c" -> (5, 7), "b" -> (8, 8)))
    assert(StoreMapOutputServing.runs(Seq.empty[(Int, String)]).isEmpty)
  }
}
