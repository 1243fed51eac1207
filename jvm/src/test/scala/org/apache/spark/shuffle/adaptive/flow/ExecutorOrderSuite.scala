package org.apache.spark.shuffle.adaptive.flow

import org.scalatest.funsuite.AnyFunSuite

class ExecutorOrderSuite extends AnyFunSuite {
  import ExecutorOrder.successors

  test("the closest successor comes first, wrapping past the largest id") {
    assert(successors("2", Seq("0", "1", "3")) === Seq("3", "0", "1"))
    assert(successors("3", Seq("0", "1", "2")) === Seq("0", "1", "2"))
    assert(successors("0", Seq("3", "2", "1")) === Seq("1", "2", "3"))
    assert(successors("1", Seq("3", "0", "2")) === Seq("2", "3", "0"))
  }

  test("numeric ids are ordered numerically: 10 follows 9") {
    val all = (0 to 11).map(_.toString)
    assert(
      successors("9", all.filter(_ != "9")) ===
        Seq("10", "11", "0", "1", "2", "3", "4", "5", "6", "7", "8"))
    assert(successors("11", all.filter(_ != "11")).take(2) === Seq("0", "1"))
    assert(successors("2", Seq("10", "9", "1")) === Seq("9", "10", "1"))
  }

  test("the input order does not matter, so all executors agree") {
    val others = Seq("5", "12", "0", "7", "3")
    val random = new scala.util.Random(5L)
    val expected = successors("4", others)
    assert(expected === Seq("5", "7", "12", "0", "3"))
    (0 until 20).foreach(_ => assert(successors("4", random.shuffle(others)) === expected))
  }

  test("non-numeric ids follow the numeric ones, by name") {
    assert(ExecutorOrder.ordering.lt("99", "driver"))
    assert(successors("2", Seq("b", "a", "1", "3")) === Seq("3", "a", "b", "1"))
    assert(successors("b", Seq("a", "c", "1")) === Seq("c", "1", "a"))
  }

  test("a self not among the others still sorts them by their distance from it") {
    assert(successors("5", Seq("1", "6", "9")) === Seq("6", "9", "1"))
    assert(successors("10", Seq("1", "6", "9")) === Seq("1", "6", "9"))
  }
}
