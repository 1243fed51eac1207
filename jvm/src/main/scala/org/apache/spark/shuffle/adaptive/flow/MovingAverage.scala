package org.apache.spark.shuffle.adaptive.flow

/** The mean of the last `window` values added (0 before the first). Not thread-safe. */
private[flow] final class MovingAverage(window: Int) {
  require(window >= 1, s"window must be >= 1, got $window")
  private[this] val values = new Array[Double](window)
  private[this] var next = 0
  private[this] var count = 0
  private[this] var sum = 0.0

  def add(v: Double): Unit = {
    if (count == window) sum -= values(next) else count += 1
    values(next) = v
    sum += v
    next = (next + 1) % window
  }

  def isEmpty: Boolean = count == 0

  def average: Double = if (count == 0) 0.0 else sum / count
}
