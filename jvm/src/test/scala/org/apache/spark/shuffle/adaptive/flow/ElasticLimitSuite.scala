package org.apache.spark.shuffle.adaptive.flow

import org.scalatest.funsuite.AnyFunSuite

class ElasticLimitSuite extends AnyFunSuite {

  private def limit(enabled: Boolean = true, window: Int = 16) =
    new ElasticLimit(
      increment = 100,
      hardLimit = 1000,
      enabled = enabled,
      window = window,
      shrinkBelow = 0.5,
      growAbove = 0.5,
      start = 1000)

  test("starts at the hard limit") {
    val l = limit()
    assert(l.current === 1000)
    assert(l.min === 1000)
    assert(l.changes === 0)
  }

  test("shrinks one increment per zero wait, never below the increment") {
    val l = limit()
    val seen = (1 to 14).map { _ => l.observeWait(0.0); l.current }
    assert(seen === Seq(900, 800, 700, 600, 500, 400, 300, 200, 100, 100, 100, 100, 100, 100))
    assert(l.min === 100)
    // Reaching the floor counts; staying there does not.
    assert(l.changes === 9)
  }

  test("a wait short against the average shrinks, one near it keeps, a long one grows") {
    val l = limit()
    // Against an average of 0 a positive wait is long.
    l.observeWait(10)
    assert(l.current === 1000)
    l.observeWait(10) // average 10: 10 > 5 grows (capped)
    assert(l.current === 1000)
    l.observeWait(4) // average 10: 4 <= 5 shrinks
    assert(l.current === 900)
    l.observeWait(5) // average 8: 5 > 4 grows
    assert(l.current === 1000)
    l.observeWait(1) // average 7.25: shrinks
    l.observeWait(1) // average 6: shrinks
    assert(l.current === 800)
    assert(l.changes === 4)
    assert(l.min === 800)
  }

  test("grows one increment per long wait when the consumer starves, never above the hard limit") {
    val l = limit()
    (1 to 9).foreach(_ => l.observeWait(0.0))
    assert(l.current === 100)
    val seen = (1 to 12).map { _ => l.observeWait(20.0); l.current }
    assert(seen === Seq(200, 300, 400, 500, 600, 700, 800, 900, 1000, 1000, 1000, 1000))
    assert(l.min === 100)
    assert(l.changes === 9 + 9)
  }

  test("with shrinkBelow < growAbove a wait between the two thresholds keeps the limit") {
    val l = new ElasticLimit(
      increment = 10,
      hardLimit = 50,
      enabled = true,
      window = 4,
      shrinkBelow = 0.5,
      growAbove = 1.5,
      start = 50)
    l.observeWait(0) // shrink to 40
    l.observeWait(8) // average 0: grows to 50
    l.observeWait(4) // average 4: 4 is in (2, 6]: keeps
    assert(l.current === 50)
    assert(l.changes === 2)
  }

  test("disabled, it stays at the hard limit whatever the waits") {
    val l = limit(enabled = false)
    Seq(0.0, 0.0, 0.0, 50.0, 0.0, 100.0, 0.0).foreach { w =>
      l.observeWait(w)
      assert(l.current === 1000)
    }
    assert(l.min === 1000)
    assert(l.changes === 0)
  }

  test("rejects an increment above the hard limit or not positive") {
    intercept[IllegalArgumentException](new ElasticLimit(0, 10, true, 4, 0.5, 0.5, 10))
    intercept[IllegalArgumentException](new ElasticLimit(11, 10, true, 4, 0.5, 0.5, 10))
  }

  test("an increment equal to the hard limit never changes") {
    val l = new ElasticLimit(100, 100, true, 4, 0.5, 0.5, 100)
    Seq(0.0, 0.0, 30.0, 30.0).foreach(l.observeWait)
    assert(l.current === 100)
    assert(l.changes === 0)
  }

  test("a reduce task's limit starts at one increment and grows only while the task waits") {
    val l = new ElasticLimit(100, 1000, true, 16, 0.5, 0.5, start = 100)
    assert(l.current === 100)
    // The first block is always waited for: the limit grows, then shrinks back while blocks
    // are there before the task asks for them.
    l.observeWait(5.0)
    assert(l.current === 200)
    (1 to 3).foreach(_ => l.observeWait(0.0))
    assert(l.current === 100)
    // Disabled, the hard limit holds throughout.
    assert(new ElasticLimit(100, 1000, false, 16, 0.5, 0.5, start = 100).current === 1000)
    intercept[IllegalArgumentException](new ElasticLimit(100, 1000, true, 16, 0.5, 0.5, 50))
  }

  test("from one increment, a starved task's limit doubles until its first shrink") {
    val l = new ElasticLimit(100, 1000, true, 16, 0.5, 0.5, start = 100)
    val starved = (1 to 5).map { _ => l.observeWait(20.0); l.current }
    assert(starved === Seq(200, 400, 800, 1000, 1000))
    l.observeWait(0.0)
    assert(l.current === 900)
    // Once it has shrunk, it grows by one increment.
    val seen = (1 to 2).map { _ => l.observeWait(50.0); l.current }
    assert(seen === Seq(1000, 1000))
    (1 to 4).foreach(_ => l.observeWait(0.0))
    assert(l.current === 600)
    l.observeWait(50.0)
    assert(l.current === 700)
  }

  test("a reduce task's limit starts at the settings' increment, a sender's at the hard limit") {
    val conf = new org.apache.spark.SparkConf()
      .set("spark.reducer.maxSizeInFlight", "48m")
      .set("spark.executor.cores", "8")
    val settings = FlowSettings(conf)
    assert(settings.requestSize === FlowSettings.DefaultIncrement)
    assert(settings.fetchLimit().current === settings.requestSize)
    assert(settings.elasticLimit().current === (48L << 20))
    // Merged runs and uploads keep Spark's request size.
    assert(settings.bulkRequestSize === (48L << 20) / 5)
  }

  test("the default increment is at most the hard limit and budget / slots; a set one is kept") {
    def increment(pairs: (String, String)*): Long = {
      val conf = new org.apache.spark.SparkConf().set("spark.executor.cores", "8")
      pairs.foreach { case (k, v) => conf.set(k, v) }
      FlowSettings(conf).requestSize
    }
    assert(
      increment(
        "spark.shuffle.adaptive.fetch.maxInFlight" -> "512k",
        "spark.shuffle.adaptive.fetch.executorBudget" -> "64m") === (512L << 10))
    assert(increment("spark.shuffle.adaptive.fetch.executorBudget" -> "4m") === (512L << 10))
    assert(increment("spark.shuffle.adaptive.fetch.inFlightIncrement" -> "4m") === (4L << 20))
  }
}
