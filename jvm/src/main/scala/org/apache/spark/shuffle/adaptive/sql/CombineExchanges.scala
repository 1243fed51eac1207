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
 * Puts a [[CombiningShuffleExchangeExec]] in the place of each exchange Spark added under an
 * aggregate's next step to shuffle a partial aggregate's rows by their keys, when the plugin is
 * the shuffle manager and local reduction is on. Every other exchange (joins, repartitions,
 * sorts, ...) is left as it is.
 */
private[spark] object CombineExchanges extends Rule[SparkPlan] {

  private def enabled: Boolean = Option(SparkEnv.get).exists { env =>
    ConfiguredShuffleManager.of(env).isInstanceOf[AdaptiveShuffleManager] && Modes(env.conf).combine
  }

  override def apply(plan: SparkPlan): SparkPlan =
    if (!enabled) plan
    else
      plan.transformUp {
        case e: ShuffleExchangeExec
            if SqlExchanges.onShuffleManager(e) && e.shuffleOrigin == ENSURE_REQUIREMENTS &&
              e.outputPartitioning.isInstanceOf[HashPartitioning] &&
              SqlCombine.of(e.child).isDefined =>
          val combining = CombiningShuffleExchangeExec(
            e.outputPartitioning,
            e.child,
            e.shuffleOrigin,
            e.advisoryPartitionSize)
          combining.copyTagsFrom(e)
          combining
      }
}
