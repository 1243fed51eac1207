package org.apache.spark.shuffle.adaptive.metrics

import org.scalatest.funsuite.AnyFunSuite

class MemorySeriesSuite extends AnyFunSuite {

  private def sample(v: Long) = MemorySample(v, 2 * v, 3 * v, 4 * v, 5 * v, 6 * v)

  test("samples gather into buckets of their largest and mean values, closed in order") {
    val series = new MemorySeries(250)
    Seq(1000L -> 10L, 1050L -> 30L, 1249L -> 20L, 1250L -> 7L, 1600L -> 1L).foreach { case (t, v) =>
      series.add(t, sample(v))
    }
    val closed = series.drain(all = false)
    assert(closed.map(_.startMs) === Seq(1000L, 1250L))
    assert(closed.head.max === sample(30).fields && closed.head.mean === sample(20).fields)
    assert(closed(1).max === sample(7).fields)
    assert(series.drain(all = false).isEmpty)
    assert(series.drain(all = true).map(b => (b.startMs, b.max)) === Seq(1500L -> sample(1).fields))
  }

  test("a bucket drained while open starts over from its next sample") {
    val series = new MemorySeries(250)
    series.add(1000, sample(50))
    assert(series.drain(all = true).map(_.max) === Seq(sample(50).fields))
    series.add(1100, sample(4))
    assert(
      series.drain(all = true).map(b => (b.startMs, b.max, b.mean)) ===
        Seq((1000L, sample(4).fields, sample(4).fields)))
  }
}
