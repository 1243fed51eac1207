package org.apache.spark.shuffle.adaptive.sql

import org.apache.spark.sql.ExtendedExplainGenerator
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanHelper
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike

/**
 * What `explain()` and the SQL tab's plan details say of a plan's exchanges, under "Extended
 * Information (pyspark-shuffle)" (`spark.sql.extendedExplainProviders=` this class, which
 * `pyspark_shuffle.configure` sets): for each exchange, whether it is the plugin's and what it
 * does there, or why it stays Spark's.
 */
class ExchangesExplained extends ExtendedExplainGenerator {

  override def title: String = "pyspark-shuffle"

  override def generateExtendedInfo(plan: SparkPlan): String =
    ExchangesExplained.lines(plan).mkString("\n")
}

private[spark] object ExchangesExplained extends AdaptiveSparkPlanHelper {

  /** A line per exchange of `plan`, in the plan's order (AQE's stages and reused ones included). */
  def lines(plan: SparkPlan): Seq[String] = exchanges(plan).map {
    case e: AdaptiveShuffleExchangeExec if e.combining =>
      s"${e.nodeName} ${e.outputPartitioning}: the plugin's: a partial aggregate's rows, " +
        "combined per executor before reduce tasks read them (local reduction)"
    case e: AdaptiveShuffleExchangeExec =>
      s"${e.nodeName} ${e.outputPartitioning}: the plugin's: reduce tasks run where their " +
        "partitions were merged (mode=push)" +
        e.coPartitionKey.fold("")(k =>
          s"; read with the exchanges of co-partition key $k at one owner")
    case e =>
      s"${e.nodeName} ${e.outputPartitioning}: Spark's: " +
        e.getTagValue(PluginExchanges.KeptBecause)
          .getOrElse("the plugin is not the shuffle manager, or its SQL extension is not set")
  }

  /** Each exchange once, through AQE's plan and query stages and into subqueries. */
  private def exchanges(plan: SparkPlan): Seq[ShuffleExchangeLike] = {
    val seen =
      java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[AnyRef, java.lang.Boolean])
    collectWithSubqueries(plan) { case e: ShuffleExchangeLike => e }.filter(e => seen.add(e))
  }
}
