package org.apache.spark.shuffle.adaptive.flow

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

/**
 * What all tasks of one executor know together about each remote executor: the bytes they have
 * in flight with it (requested or sent, not yet done with) and a moving average of how long they
 * blocked waiting on it. Shared through [[PeerTraffic.shared]]; thread-safe.
 */
private[spark] final class PeerTraffic(window: Int) {
  private[this] val inFlight = new ConcurrentHashMap[String, AtomicLong]
  private[this] val waits = new ConcurrentHashMap[String, MovingAverage]

  def addInFlight(executorId: String, bytes: Long): Unit =
    inFlight.computeIfAbsent(executorId, _ => new AtomicLong).addAndGet(bytes)

  def inFlightTo(executorId: String): Long = {
    val bytes = inFlight.get(executorId)
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
}

private[spark] object PeerTraffic {
  @volatile private var instance: PeerTraffic = _

  /** The executor's one instance (its window fixed by the first task that asks). */
  def shared(window: Int): PeerTraffic = {
    if (instance == null) synchronized {
      if (instance == null) instance = new PeerTraffic(window)
    }
    instance
  }
}
