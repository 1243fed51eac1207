package org.apache.spark.shuffle.adaptive

import org.apache.spark.SparkContext

/** The plugin's counters as its driver sums them, seen from a test's driver. */
private[adaptive] object PluginCounters {

  /** `{"application": ..., "executors": ...}` once the listener has seen every event posted. */
  def snapshot(sc: SparkContext): Map[String, Any] = {
    sc.listenerBus.waitUntilEmpty()
    sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager].driver.get.fetchMetrics.snapshot()
  }

  def application(sc: SparkContext): Map[String, Any] =
    snapshot(sc)("application").asInstanceOf[Map[String, Any]]
}
