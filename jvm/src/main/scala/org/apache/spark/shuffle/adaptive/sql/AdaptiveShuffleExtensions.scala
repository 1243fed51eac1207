package org.apache.spark.shuffle.adaptive.sql

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.{ColumnarRule, SparkPlan}

/**
 * The plugin's Spark SQL rules, installed by
 * `spark.sql.extensions=org.apache.spark.shuffle.adaptive.sql.AdaptiveShuffleExtensions` (which
 * `pyspark_shuffle.configure` sets): the plugin's exchange ([[PluginExchanges]]: local
 * reduction, and reduce tasks at their partitions' owners in mode=push), before
 * AQE makes query stages of a plan's exchanges and, without AQE, before Spark's columnar rules.
 * They change nothing unless the plugin is the shuffle manager.
 */
class AdaptiveShuffleExtensions extends (SparkSessionExtensions => Unit) {

  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectQueryStagePrepRule(_ => PluginExchanges)
    extensions.injectColumnar(_ => AdaptiveShuffleExtensions.Columnar)
  }
}

private object AdaptiveShuffleExtensions {

  /** Without AQE, the plan's exchanges are in place when columnar rules run. */
  object Columnar extends ColumnarRule {
    override def preColumnarTransitions: Rule[SparkPlan] = PluginExchanges
  }
}
