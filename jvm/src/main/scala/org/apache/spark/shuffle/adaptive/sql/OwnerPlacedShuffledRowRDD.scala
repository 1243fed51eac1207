package org.apache.spark.shuffle.adaptive.sql

import org.apache.spark.{MapOutputTrackerMaster, Partition, ShuffleDependency, SparkEnv}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, ShufflePartitionSpec, ShuffledRowRDD}
import org.apache.spark.sql.execution.metric.SQLMetric
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleHandle
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable
import org.apache.spark.shuffle.adaptive.push.reduce.ReduceLocations

/**
 * Spark's shuffled rows, whose reduce tasks prefer to run where their partitions were merged
 * (mode=push): a task that reads whole partitions prefers the live owner of most of their bytes
 * ([[ReduceLocations]]). Skew splits and local reads read some map outputs only, mostly from
 * files, and keep Spark's preferences, as do shuffles with no owners (mode=pull).
 */
private[sql] final class OwnerPlacedShuffledRowRDD(
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

  // The live owners, asked of the driver once per RDD rather than once per partition (asking
  // is a block manager master round trip, and the scheduler asks every partition's locations
  // when it submits the stage). An owner lost after that is skipped by Spark's scheduler, which
  // places no task at an executor it no longer has.
  @transient private[this] lazy val liveOwners: Option[OwnerTable] =
    dependency.shuffleHandle match {
      case handle: AdaptiveShuffleHandle[_, _, _] => handle.liveOwners.filterNot(_.isEmpty)
      case _ => None
    }

  override def getPreferredLocations(partition: Partition): Seq[String] =
    (specs(partition.index), liveOwners) match {
      case (CoalescedPartitionSpec(start, end, _), Some(table)) =>
        ReduceLocations.of(table, start, end, partitionBytes(_))
      case _ => super.getPreferredLocations(partition)
    }
}
