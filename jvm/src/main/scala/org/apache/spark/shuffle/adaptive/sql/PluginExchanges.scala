package org.apache.spark.shuffle.adaptive.sql

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.SparkEnv
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, HashPartitioning}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.exchange.{ENSURE_REQUIREMENTS, ShuffleExchangeExec}
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager
import org.apache.spark.shuffle.adaptive.compat.{ConfiguredShuffleManager, SqlExchanges}
import org.apache.spark.shuffle.adaptive.config.Modes

/**
 * Puts an [[AdaptiveShuffleExchangeExec]] in the place of Spark's exchanges when the plugin is
 * the shuffle manager: in mode=push every exchange on the shuffle manager, so that reduce tasks
 * run where their partitions were merged; with local reduction on, the exchanges Spark added
 * under an aggregate's next step to shuffle a partial aggregate's rows by their keys, which then
 * combine. Every other exchange is left as it is.
 *
 * The plugin's exchanges whose partitions i one task reads together (the sides of a join that
 * needs its children clustered, with nothing but narrow steps in between) are tagged with one
 * [[CoPartitionKey]], so that the driver gives them one owner per partition.
 */
private[spark] object AdaptiveExchanges extends Rule[SparkPlan] {

  private def modes: Option[Modes] = Option(SparkEnv.get).collect {
    case env if ConfiguredShuffleManager.of(env).isInstanceOf[AdaptiveShuffleManager] =>
      Modes(env.conf)
  }

  /** Exchanges of one key are read partition by partition by the same tasks. */
  val CoPartitionKey = TreeNodeTag[Long]("pyspark-shuffle.coPartitionKey")

  private[this] val keys = new AtomicLong

  override def apply(plan: SparkPlan): SparkPlan = modes match {
    case Some(m) if m.push || m.combine =>
      val replaced = replace(plan, m)
      if (m.push) tagCoPartitioned(replaced)
      replaced
    case _ => plan
  }

  private def tagCoPartitioned(plan: SparkPlan): Unit = plan.foreach { node =>
    val required = node.requiredChildDistribution
    if (node.children.size >= 2 && required.size == node.children.size &&
      required.forall(_.isInstanceOf[ClusteredDistribution])) {
      val exchanges = node.children.flatMap(exchangeBelow)
      if (exchanges.size >= 2 && exchanges
          .map(_.outputPartitioning.numPartitions)
          .distinct
          .size == 1) {
        val key = keys.incrementAndGet()
        exchanges.foreach(_.setTagValue(CoPartitionKey, key))
      }
    }
  }

  // Narrow steps (sorts, projections, aggregates over the exchange's partitions) keep partition
  // i of the exchange in partition i of their output.
  private def exchangeBelow(plan: SparkPlan): Option[AdaptiveShuffleExchangeExec] = plan match {
    case e: AdaptiveShuffleExchangeExec => Some(e)
    case u: UnaryExecNode
        if u.outputPartitioning.numPartitions == u.child.outputPartitioning.numPartitions =>
      exchangeBelow(u.child)
    case _ => None
  }

  private def replace(plan: SparkPlan, m: Modes): SparkPlan =
    plan.transformUp {
      case e: ShuffleExchangeExec if SqlExchanges.onShuffleManager(e) =>
        val combining = m.combine && e.shuffleOrigin == ENSURE_REQUIREMENTS &&
          e.outputPartitioning.isInstanceOf[HashPartitioning] &&
          SqlCombine.of(e.child).isDefined
        if (!combining && !m.push) e
        else {
          val replaced = AdaptiveShuffleExchangeExec(
            e.outputPartitioning,
            e.child,
            e.shuffleOrigin,
            e.advisoryPartitionSize,
            combining)
          replaced.copyTagsFrom(e)
          replaced
        }
    }
}
