package org.apache.spark.shuffle.adaptive.compat

import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleOrigin}

/**
 * Spark SQL's shuffle exchange: Spark 4.3 runs a pipelined exchange on its pipelined shuffle
 * manager, the others on the configured (blocking) one.
 */
private[spark] object SqlExchanges {

  /** Whether `exchange` runs on the configured (blocking) shuffle manager. */
  def onShuffleManager(exchange: ShuffleExchangeExec): Boolean = !exchange.pipelined

  def exchange(
      partitioning: Partitioning,
      child: SparkPlan,
      origin: ShuffleOrigin,
      advisoryPartitionSize: Option[Long]): ShuffleExchangeExec =
    ShuffleExchangeExec(partitioning, child, origin, advisoryPartitionSize, pipelined = false)
}
