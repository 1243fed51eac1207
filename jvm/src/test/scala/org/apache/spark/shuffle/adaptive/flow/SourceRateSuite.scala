package org.apache.spark.shuffle.adaptive.flow

import org.scalactic.TolerantNumerics
import org.scalatest.funsuite.AnyFunSuite

class SourceRateSuite extends AnyFunSuite {

  private val Ms = 1000L * 1000
  implicit private val closeEnough: org.scalactic.Equality[Double] =
    TolerantNumerics.tolerantDoubleEquality(1e-6)

  test("the rate is bytes over busy time, not over each request's latency") {
    val rate = new SourceRate(windowNanos = 10000 * Ms)
    assert(rate.bytesPerSecond(0L).isEmpty)
    // Two requests queued at once: the second completes after 200 ms, having waited for the
    // first. 2000 bytes in 200 ms busy is 10000 bytes/s, though each took 100 and 200 ms.
    rate.requestStarted(0L)
    rate.requestStarted(0L)
    rate.delivered(100 * Ms, 1000)
    rate.requestEnded(100 * Ms)
    rate.delivered(200 * Ms, 1000)
    rate.requestEnded(200 * Ms)
    assert(rate.requestsOutstanding === 0)
    assert(rate.bytesPerSecond(200 * Ms).get === 10000.0)
    // Idle time does not count.
    assert(rate.bytesPerSecond(5000 * Ms).get === 10000.0)
    rate.requestStarted(5000 * Ms)
    rate.delivered(5100 * Ms, 1000)
    rate.requestEnded(5100 * Ms)
    assert(rate.bytesPerSecond(5100 * Ms).get === 10000.0)
  }

  test("asked and silent: the rate falls while nothing arrives") {
    val rate = new SourceRate(windowNanos = 10000 * Ms)
    rate.requestStarted(0L)
    assert(rate.bytesPerSecond(1000 * Ms).get === 0.0)
    rate.delivered(1000 * Ms, 500)
    assert(rate.bytesPerSecond(1000 * Ms).get === 500.0)
    assert(rate.bytesPerSecond(2000 * Ms).get === 250.0)
  }

  test("old history decays by half per window of busy time: a link that slows down is seen") {
    val rate = new SourceRate(windowNanos = 1000 * Ms)
    rate.requestStarted(0L)
    rate.delivered(1000 * Ms, 1000000) // 1 MB/s for a second
    (1 to 10).foreach(i => rate.delivered((1000 + i * 1000) * Ms, 1000)) // then 1 kB/s
    val seen = rate.bytesPerSecond(11000 * Ms).get
    assert(seen > 1000.0 && seen < 3000.0, seen)
    // Without decay the first second would still dominate: 1.01 MB over 11 s, 92 kB/s.
  }

  test("ending more requests than started never counts below zero") {
    val rate = new SourceRate(windowNanos = 1000 * Ms)
    rate.requestEnded(0L)
    assert(rate.requestsOutstanding === 0)
    rate.requestStarted(0L)
    assert(rate.requestsOutstanding === 1)
  }
}
