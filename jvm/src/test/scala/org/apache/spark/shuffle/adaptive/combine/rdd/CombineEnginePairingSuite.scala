package org.apache.spark.shuffle.adaptive.combine.rdd

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.Aggregator
import org.apache.spark.shuffle.adaptive.combine.Budget

class CombineEnginePairingSuite extends AnyFunSuite {

  private val aggregator = new Aggregator[Any, Any, Any](
    v => v,
    (c, v) => c.asInstanceOf[Int] + v.asInstanceOf[Int],
    (a, b) => a.asInstanceOf[Int] + b.asInstanceOf[Int])

  test("an engine takes only the records its own kind makes: a wrong pairing does not compile") {
    val budget = new Budget {
      override def reserve(bytes: Long): Boolean = true
      override def release(bytes: Long): Unit = ()
    }
    val numbers = new NumberCombiners(aggregator, NumberKind.Ints, NumberKind.Ints)
    val objects = new ObjectCombiners(aggregator)
    assert(numbers.newTaskRecords(budget, 1).keep(0, (1, 2)))
    assertCompiles(
      "numbers.fold(numbers.newTaskRecords(budget, 1), 0, 0, numbers.newCombined(budget))")
    assertTypeError(
      "numbers.fold(objects.newTaskRecords(budget, 1), 0, 0, numbers.newCombined(budget))")
    assertTypeError(
      "objects.fold(objects.newTaskRecords(budget, 1), 0, 0, numbers.newCombined(budget))")
    assertTypeError("objects.write(0, numbers.newCombined(budget), null)")
    // A spec's engines share its types, so records one thread's engine made fold with another's.
    val spec = AggregatorCombine(aggregator, Some((NumberKind.Ints, NumberKind.Ints)))
    assertCompiles(
      "spec.newEngine().fold(spec.newEngine().newTaskRecords(budget, 1), 0, 0, " +
        "spec.newEngine().newCombined(budget))")
  }
}
