package org.apache.spark.shuffle.adaptive.fetch

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

/**
 * What all reduce tasks of one executor know together about each remote executor: the bytes
 * they have in flight to it (requested, not yet consumed) and a moving average of how long they
 * blocked waiting for its blocks. Shared through [[ExecutorFetchState.shared]]; thread-safe.
 */
private[spark] final class ExecutorFetchState(window: Int) {
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

private[spark] object ExecutorFetchState {
  @volatile private var instance: ExecutorFetchState = _

  /** The executor's one instance (its window fixed by the first task that asks). */
  def shared(window: Int): ExecutorFetchState = {
    if (instance == null) synchronized {
      if (instance == null) instance = new ExecutorFetchState(window)
    }
    instance
  }
}
