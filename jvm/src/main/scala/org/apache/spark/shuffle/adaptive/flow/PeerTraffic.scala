package org.apache.spark.shuffle.adaptive.flow

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

/**
 * What all tasks of one executor know together about each remote executor: the bytes they have
 * in flight with it (requested or sent, not yet done with), the bytes they still have to ask of
 * it (pending), a moving average of how long they blocked waiting on it, and how fast it
 * delivers while asked ([[SourceRate]]). Shared through [[PeerTraffic.shared]]; thread-safe.
 */
private[spark] final class PeerTraffic(
    window: Int,
    rateWindowNanos: Long = PeerTraffic.RateWindowNanos) {
  private[this] val inFlight = new ConcurrentHashMap[String, AtomicLong]
  private[this] val pending = new ConcurrentHashMap[String, AtomicLong]
  private[this] val waits = new ConcurrentHashMap[String, MovingAverage]
  private[this] val rates = new ConcurrentHashMap[String, SourceRate]

  def addInFlight(executorId: String, bytes: Long): Unit =
    inFlight.computeIfAbsent(executorId, _ => new AtomicLong).addAndGet(bytes)

  def inFlightTo(executorId: String): Long = {
    val bytes = inFlight.get(executorId)
    if (bytes == null) 0L else bytes.get()
  }

  def addPending(executorId: String, bytes: Long): Unit =
    pending.computeIfAbsent(executorId, _ => new AtomicLong).addAndGet(bytes)

  def pendingFrom(executorId: String): Long = {
    val bytes = pending.get(executorId)
    if (bytes == null) 0L else bytes.get()
  }

  def recordWait(executorId: String, millis: Double): Unit = {
    val average = waits.computeIfAbsent(executorId, _ => new MovingAverage(window))
    average.synchronized(average.add(millis))
  }

  def averageWaitMs(executorId: String): Double = {
    val average = waits.get(executorId)
    if (average == null) 0.0 else average.synchronized(average.average)
  }

  def rate(executorId: String): SourceRate =
    rates.computeIfAbsent(executorId, _ => new SourceRate(rateWindowNanos))

  /**
   * Seconds the executor's tasks still need from the source at its observed rate: bytes pending
   * and in flight over bytes per second; a source never asked is assumed to deliver `unknownRate`
   * (see [[meanRate]]).
   */
  def remainingSeconds(executorId: String, now: Long, unknownRate: Double): Double = {
    val bytes = (pendingFrom(executorId) + inFlightTo(executorId)).toDouble
    val observed = rate(executorId).bytesPerSecond(now).getOrElse(unknownRate)
    if (bytes <= 0) 0.0 else if (observed <= 0) Double.PositiveInfinity else bytes / observed
  }

  /**
   * The mean rate of the sources asked so far: what a source never asked is assumed to deliver.
   * 1 byte/s when none delivered, so that bytes alone decide.
   */
  def meanRate(now: Long): Double = {
    var sum = 0.0
    var n = 0
    rates.values.forEach { r =>
      r.bytesPerSecond(now).foreach { v => sum += v; n += 1 }
    }
    if (n == 0 || sum == 0) 1.0 else sum / n
  }
}

private[spark] object PeerTraffic {

  /** Busy time a source's rate covers: several large requests even on a slow link. */
  val RateWindowNanos: Long = 5L * 1000 * 1000 * 1000

  @volatile private var instance: PeerTraffic = _

  /** The executor's one instance (its window fixed by the first task that asks). */
  def shared(window: Int): PeerTraffic = {
    if (instance == null) synchronized {
      if (instance == null) instance = new PeerTraffic(window)
    }
    instance
  }
}
