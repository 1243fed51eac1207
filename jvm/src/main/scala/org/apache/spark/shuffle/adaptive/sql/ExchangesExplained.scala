package org.apache.spark.shuffle.adaptive.sql

import org.apache.spark.SparkEnv
import org.apache.spark.sql.ExtendedExplainGenerator
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanHelper, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeLike
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager
import org.apache.spark.shuffle.adaptive.compat.ConfiguredShuffleManager
import org.apache.spark.shuffle.adaptive.push.driver.PushVerdict

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
  def lines(plan: SparkPlan): Seq[String] = {
    val ran = materialized(plan)
    exchanges(plan).map(e => line(e, if (ran.contains(e)) verdictOf(e.shuffleId) else None))
  }

  private def line(e: ShuffleExchangeLike, verdict: Option[PushVerdict.Verdict]): String = e match {
    case e: AdaptiveShuffleExchangeExec if e.combining =>
      s"${e.nodeName} ${e.outputPartitioning}: the plugin's: a partial aggregate's rows, " +
        "combined per executor before reduce tasks read them (local reduction)"
    case e: AdaptiveShuffleExchangeExec =>
      s"${e.nodeName} ${e.outputPartitioning}: the plugin's: reduce tasks run where their " +
        "partitions were merged (mode=push)" +
        verdict.fold("")(v =>
          s"; mode=auto ${if (v.push) "pushed" else "pulled"} shuffle ${e.shuffleId}: ${v.why}") +
        e.coPartitionKey.fold("")(k =>
          s"; read with the exchanges of co-partition key $k at one owner")
    case e =>
      s"${e.nodeName} ${e.outputPartitioning}: Spark's: " +
        e.getTagValue(PluginExchanges.KeptBecause)
          .getOrElse("the plugin is not the shuffle manager, or its SQL extension is not set")
  }

  /**
   * The exchanges of AQE's query stages that ran: their shuffles are registered, so asking for
   * their ids registers none.
   */
  private def materialized(plan: SparkPlan): java.util.Set[AnyRef] = {
    val ran =
      java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[AnyRef, java.lang.Boolean])
    collectWithSubqueries(plan) {
      case s: ShuffleQueryStageExec if s.isMaterialized => s.shuffle
    }.foreach(ran.add)
    ran
  }

  /** mode=auto's verdict on a registered shuffle, from the plugin's driver. */
  private def verdictOf(shuffleId: Int): Option[PushVerdict.Verdict] =
    Option(SparkEnv.get)
      .map(ConfiguredShuffleManager.of)
      .collect { case m: AdaptiveShuffleManager =>
        m.driver.flatMap(_.verdictOf(shuffleId))
      }
      .flatten

  /** Each exchange once, through AQE's plan and query stages and into subqueries. */
  private def exchanges(plan: SparkPlan): Seq[ShuffleExchangeLike] = {
    val seen =
      java.util.Collections.newSetFromMap(new java.util.IdentityHashMap[AnyRef, java.lang.Boolean])
    collectWithSubqueries(plan) { case e: ShuffleExchangeLike => e }.filter(e => seen.add(e))
  }
}
