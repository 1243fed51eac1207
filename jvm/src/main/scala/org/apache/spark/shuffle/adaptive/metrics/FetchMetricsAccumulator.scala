package org.apache.spark.shuffle.adaptive.metrics

import org.apache.spark.scheduler.SparkListenerTaskEnd

/**
 * Carries [[FetchCounters]] from tasks to the driver. One is registered per shuffle on the driver
 * and travels inside the shuffle handle (see [[TaskAccumulator]]); Spark lists it per task and
 * stage in the UI, under the accumulator's name.
 */
private[spark] final class FetchMetricsAccumulator private (initial: FetchCounters)
    extends TaskAccumulator[FetchCounters, FetchCounters](initial) {

  def this() = this(new FetchCounters)

  override protected def zero(): FetchCounters = new FetchCounters
  override protected def isEmpty(state: FetchCounters): Boolean = state.isZero
  override protected def addTo(state: FetchCounters, v: FetchCounters): Unit = state.merge(v)
  override protected def mergeInto(state: FetchCounters, other: FetchCounters): Unit =
    state.merge(other)

  override def copy(): FetchMetricsAccumulator = synchronized {
    new FetchMetricsAccumulator(value.copy())
  }
}

private[spark] object FetchMetricsAccumulator {

  /** Accumulator names start with this, followed by the shuffle id. */
  val NamePrefix = "pyspark-shuffle fetch, shuffle "

  /** The counters a finished task reported, with their shuffle's id (its accumulators' names). */
  def ofTask(taskEnd: SparkListenerTaskEnd): Seq[(Int, FetchCounters)] =
    Option(taskEnd.taskInfo).toSeq.flatMap(_.accumulables).collect {
      case acc
          if acc.name.exists(_.startsWith(NamePrefix)) && acc.update.exists(
            _.isInstanceOf[FetchCounters]) =>
        (acc.name.get.stripPrefix(NamePrefix).toInt, acc.update.get.asInstanceOf[FetchCounters])
    }
}
