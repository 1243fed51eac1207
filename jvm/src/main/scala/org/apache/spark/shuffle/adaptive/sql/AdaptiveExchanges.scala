package org.apache.spark.shuffle.adaptive.sql

import org.apache.spark.SparkEnv
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.SparkPlan
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
 */
private[spark] object AdaptiveExchanges extends Rule[SparkPlan] {

  private def modes: Option[Modes] = Option(SparkEnv.get).collect {
    case env if ConfiguredShuffleManager.of(env).isInstanceOf[AdaptiveShuffleManager] =>
      Modes(env.conf)
  }

  override def apply(plan: SparkPlan): SparkPlan = modes match {
    case Some(m) if m.push || m.combine =>
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
    case _ => plan
  }
}
