package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}

/**
 * Driver side: adds up the [[FetchCounters]] that finished tasks report, for the application
 * and per executor, from the per-task values of the plugin's accumulators, and keeps `source`
 * (the driver's [[PluginMetricsSource]]) up to date with them.
 */
private[spark] final class FetchMetricsListener(source: PluginMetricsSource) extends SparkListener {

  private[this] val application = new FetchCounters
  private[this] val byExecutor = mutable.TreeMap.empty[String, FetchCounters]

  override def onTaskEnd(taskEnd: SparkListenerTaskEnd): Unit =
    FetchMetricsAccumulator.ofTask(taskEnd).foreach { case (_, counters) =>
      source.update(
        "",
        synchronized {
          application.merge(counters)
          byExecutor.getOrElseUpdate(taskEnd.taskInfo.executorId, new FetchCounters).merge(counters)
          snapshot()
        })
    }

  /** `{"application": counters, "executors": {executor id: counters}}`. */
  def snapshot(): Map[String, Any] = synchronized {
    Map(
      "application" -> application.toMap,
      "executors" -> byExecutor.iterator.map { case (id, c) => id -> c.toMap }.toMap)
  }
}
