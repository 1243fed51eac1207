package org.apache.spark.shuffle.adaptive.metrics

import org.apache.spark.scheduler.SparkListenerTaskEnd
import org.apache.spark.util.AccumulatorV2

/**
 * Carries [[FetchCounters]] from reduce tasks to the driver. One is registered per shuffle on the
 * driver and travels inside the shuffle handle, so each task deserializes its own zeroed copy,
 * updates it, and Spark merges it back with the task's result (and lists it per task and stage
 * in the UI, under the accumulator's name).
 */
private[spark] final class FetchMetricsAccumulator(private var counters: FetchCounters)
    extends AccumulatorV2[FetchCounters, FetchCounters] {

  def this() = this(new FetchCounters)

  override def isZero: Boolean = counters.isZero
  override def copy(): FetchMetricsAccumulator = new FetchMetricsAccumulator(counters.copy())
  override def reset(): Unit = counters = new FetchCounters
  override def add(v: FetchCounters): Unit = counters.merge(v)
  override def merge(other: AccumulatorV2[FetchCounters, FetchCounters]): Unit =
    counters.merge(other.value)
  override def value: FetchCounters = counters
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
