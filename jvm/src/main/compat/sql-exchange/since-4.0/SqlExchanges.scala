package org.apache.spark.shuffle.adaptive.compat

import org.apache.spark.sql.catalyst.plans.physical.Partitioning
import org.apache.spark.sql.execution.SparkPlan
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleOrigin}

/** Spark SQL's shuffle exchange: up to Spark 4.2, every one runs on the shuffle manager. */
private[spark] object SqlExchanges {

  /** Whether `exchange` runs on the configured (blocking) shuffle manager. */
  def onShuffleManager(exchange: ShuffleExchangeExec): Boolean = true

  def exchange(
      partitioning: Partitioning,
      child: SparkPlan,
      origin: ShuffleOrigin,
      advisoryPartitionSize: Option[Long]): ShuffleExchangeExec =
    ShuffleExchangeExec(partitioning, child, origin, advisoryPartitionSize)
}
