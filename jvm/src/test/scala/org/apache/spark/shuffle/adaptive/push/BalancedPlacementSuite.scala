package org.apache.spark.shuffle.adaptive.push

import org.scalatest.funsuite.AnyFunSuite

class BalancedPlacementSuite extends AnyFunSuite {

  private def loads(predicted: Array[Double], owners: Array[String]): Map[String, Double] =
    owners.zip(predicted).groupMapReduce(_._1)(_._2)(_ + _)

  test("largest partition first, onto the least-loaded executor") {
    val owners =
      BalancedPlacement.place(Array(1, 8, 3, 4, 2).map(_.toDouble), Map.empty, Seq("a", "b", "c"))
    // 8 -> a, 4 -> b, 3 -> c, then 2 -> c (3 < 4), then 1 -> b (4 < 5).
    assert(owners.toSeq === Seq("b", "a", "c", "b", "c"))
    assert(
      loads(Array(1, 8, 3, 4, 2).map(_.toDouble), owners) ===
        Map("a" -> 8.0, "b" -> 5.0, "c" -> 5.0))
  }

  test("ties: the smaller partition first, the executor first in executor order") {
    val owners = BalancedPlacement.place(Array(5.0, 5.0, 5.0), Map.empty, Seq("10", "2", "9"))
    assert(owners.toSeq === Seq("2", "9", "10"))
    assert(
      BalancedPlacement.place(Array(5.0, 5.0, 5.0), Map.empty, Seq("9", "10", "2")).toSeq ===
        owners.toSeq,
      "the order executors are listed in does not matter")
  }

  test("pinned partitions keep their owner and count towards its load") {
    val predicted = Array(10.0, 6.0, 5.0, 1.0)
    val owners = BalancedPlacement.place(predicted, Map(3 -> "a", 1 -> "a"), Seq("a", "b"))
    assert(owners(3) === "a" && owners(1) === "a")
    // a holds 7: 10 goes to b, then 5 to a (7 < 10).
    assert(owners(0) === "b" && owners(2) === "a")
  }

  test("owners pinned to an executor that is gone are placed again") {
    val owners = BalancedPlacement.place(Array(1.0, 2.0), Map(0 -> "gone"), Seq("a", "b"))
    assert(owners.toSeq === Seq("b", "a"))
  }

  test("the most loaded executor holds at most the largest partition more than the mean") {
    val rng = new scala.util.Random(3)
    val predicted = Array.fill(200)(math.pow(rng.nextDouble(), 3) * 1000)
    val executors = (0 until 7).map(_.toString)
    val load = loads(predicted, BalancedPlacement.place(predicted, Map.empty, executors))
    assert(load.values.max <= predicted.sum / executors.size + predicted.max)
    assert(load.keySet === executors.toSet)
  }
}
