package org.apache.spark.shuffle.adaptive.flow

/**
 * How fast one source delivers to this executor while it is asked for something: bytes
 * delivered over the time at least one request of the executor's tasks was outstanding with it
 * (busy time), not over each request's own latency, so requests that queue behind each other at
 * the source do not make its link look slower than it is. Both sums decay once the busy time
 * passes `windowNanos`, so the rate follows a link whose speed changes. Thread-safe.
 */
private[spark] final class SourceRate(windowNanos: Long) {
  require(windowNanos > 0, s"the rate window must be positive, got $windowNanos ns")

  private[this] var outstanding = 0
  private[this] var busySince = 0L
  private[this] var busyNanos = 0.0
  private[this] var bytes = 0.0

  def requestStarted(now: Long): Unit = synchronized {
    if (outstanding == 0) busySince = now
    outstanding += 1
  }

  def delivered(now: Long, size: Long): Unit = synchronized {
    accrue(now)
    bytes += size
  }

  def requestEnded(now: Long): Unit = synchronized {
    accrue(now)
    outstanding = math.max(0, outstanding - 1)
  }

  /** Requests of the executor's tasks not yet completely delivered. */
  def requestsOutstanding: Int = synchronized(outstanding)

  /**
   * Bytes per second delivered while busy, None before the source was ever asked. A source asked
   * that has delivered nothing yet has rate 0: the longer it keeps the executor waiting, the
   * more its remaining bytes weigh.
   */
  def bytesPerSecond(now: Long): Option[Double] = synchronized {
    val busy = busyNanos + (if (outstanding > 0) now - busySince else 0L)
    if (busy <= 0) None else Some(bytes * 1e9 / busy)
  }

  private def accrue(now: Long): Unit = {
    if (outstanding > 0) {
      busyNanos += now - busySince
      busySince = now
    }
    if (busyNanos > windowNanos) {
      val keep = windowNanos / busyNanos
      busyNanos *= keep
      bytes *= keep
    }
  }
}
