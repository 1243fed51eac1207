package org.apache.spark.shuffle.adaptive.sql

import org.apache.spark.{MapOutputTrackerMaster, Partition, ShuffleDependency, SparkEnv}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec, ShuffledRowRDD}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleHandle
import org.apache.spark.shuffle.adaptive.push.reduce.ReduceLocations

/**
 * Spark's shuffled rows, whose reduce tasks prefer to run where their partitions were merged
 * (mode=push): a task that reads whole partitions prefers the live owner of most of their bytes
 * ([[ReduceLocations]]). Skew splits and local reads read some map outputs only, mostly from
 * files, and keep Spark's preferences, as do shuffles with no owners (mode=pull).
 */
private[spark] final class OwnerPlacedShuffledRowRDD(
    dependency: ShuffleDependency[Int, InternalRow, InternalRow],
    metrics: Map[String, SQLMetric],
    specs: Array[ShufflePartitionSpec])
    extends ShuffledRowRDD(dependency, metrics, specs) {

  def this(
      dependency: ShuffleDependency[Int, InternalRow, InternalRow],
      metrics: Map[String, SQLMetric]) =
    this(
      dependency,
      metrics,
      Array.tabulate(dependency.partitioner.numPartitions)(i => CoalescedPartitionSpec(i, i + 1)))

  // Bytes per reduce partition, asked of the tracker once, for ranges that span owners.
  @transient private[this] lazy val partitionBytes: Array[Long] = SparkEnv.get.mapOutputTracker
    .asInstanceOf[MapOutputTrackerMaster]
    .getStatistics(dependency)
    .bytesByPartitionId

  override def getPreferredLocations(partition: Partition): Seq[String] =
    (specs(partition.index), dependency.shuffleHandle) match {
      case (CoalescedPartitionSpec(start, end, _), handle: AdaptiveShuffleHandle[_, _, _]) =>
        handle.liveOwners.filterNot(_.isEmpty) match {
          case Some(table) => ReduceLocations.of(table, start, end, partitionBytes(_))
          case None => super.getPreferredLocations(partition)
        }
      case _ => super.getPreferredLocations(partition)
    }
}
