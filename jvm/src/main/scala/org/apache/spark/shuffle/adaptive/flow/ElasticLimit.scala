package org.apache.spark.shuffle.adaptive.flow

/**
 * A reduce task's in-flight limit (memory-optimized shuffling paper, section IV-B). It starts at
 * `start` (the paper's: the hard limit); after each block the task takes, the time it waited
 * for that block is compared with the moving average of its earlier waits: at most
 * `shrinkBelow` times the average (data was already there: the task consumes slower than blocks
 * arrive) shrinks the limit by one increment, more than `growAbove` times the average (the task
 * starved) grows it by one; it stays within [increment, hardLimit]. Until its first shrink a
 * long wait doubles the limit instead: a limit that starts at one small increment reaches what
 * a task starved by the network needs in a few waits, not one wait per increment. Disabled, it
 * is the hard limit throughout.
 */
private[spark] final class ElasticLimit(
    increment: Long,
    hardLimit: Long,
    enabled: Boolean,
    window: Int,
    shrinkBelow: Double,
    growAbove: Double,
    start: Long) {
  require(
    increment > 0 && increment <= hardLimit,
    s"increment ($increment) must be positive and at most the hard limit ($hardLimit)")
  require(
    start >= increment && start <= hardLimit,
    s"start ($start) outside [$increment, $hardLimit]")

  private[this] val waits = new MovingAverage(window)
  private[this] var limit = if (enabled) start else hardLimit
  private[this] var lowest = limit
  private[this] var changed = 0L
  private[this] var shrunk = false

  def current: Long = limit
  def min: Long = lowest
  def changes: Long = changed

  /** Records the wait before a block was available (0 if it was ready) and adapts the limit. */
  def observeWait(millis: Double): Unit = if (enabled) {
    val average = waits.average
    val next =
      if (millis <= shrinkBelow * average) math.max(increment, limit - increment)
      else if (millis > growAbove * average) math.min(hardLimit, limit + step)
      else limit
    if (next < limit) shrunk = true
    if (next != limit) {
      limit = next
      lowest = math.min(lowest, next)
      changed += 1
    }
    waits.add(millis)
  }

  private def step: Long = if (shrunk) increment else limit
}
