package org.apache.spark.shuffle.adaptive.flow

import org.scalatest.funsuite.AnyFunSuite

class MovingAverageSuite extends AnyFunSuite {

  test("the average is 0 before the first value") {
    val m = new MovingAverage(4)
    assert(m.isEmpty)
    assert(m.average === 0.0)
  }

  test("averages the values so far until the window is full, then only the last window") {
    val m = new MovingAverage(3)
    m.add(3)
    assert(!m.isEmpty)
    assert(m.average === 3.0)
    m.add(6)
    assert(m.average === 4.5)
    m.add(9)
    assert(m.average === 6.0)
    // 3 leaves the window.
    m.add(12)
    assert(m.average === 9.0)
    m.add(0)
    m.add(0)
    assert(m.average === 4.0)
    m.add(0)
    assert(m.average === 0.0)
  }

  test("a window of one is the last value") {
    val m = new MovingAverage(1)
    Seq(5.0, 1.0, 7.5).foreach { v =>
      m.add(v)
      assert(m.average === v)
    }
  }

  test("matches a direct computation over a long random sequence") {
    val random = new scala.util.Random(11L)
    val window = 5
    val m = new MovingAverage(window)
    val all = scala.collection.mutable.ArrayBuffer.empty[Double]
    for (_ <- 0 until 200) {
      val v = random.nextInt(1000).toDouble
      m.add(v)
      all += v
      val last = all.takeRight(window)
      assert(math.abs(m.average - last.sum / last.size) < 1e-9)
    }
  }

  test("rejects an empty window") {
    intercept[IllegalArgumentException](new MovingAverage(0))
  }
}
