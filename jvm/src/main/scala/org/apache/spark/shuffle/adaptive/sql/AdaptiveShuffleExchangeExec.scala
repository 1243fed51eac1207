package org.apache.spark.shuffle.adaptive.sql

import scala.concurrent.Future

import org.apache.spark.{MapOutputStatistics, PartitionIdPassthrough, ShuffleDependency}
import org.apache.spark.rdd.RDD
import org.apache.spark.serializer.Serializer
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.expressions.{Pmod, UnsafeProjection}
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning
import org.apache.spark.sql.execution.{ShufflePartitionSpec, SparkPlan, SQLExecution, UnsafeRowSerializer}
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleExchangeLike, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.{SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter}
import org.apache.spark.util.MutablePair
import org.apache.spark.shuffle.adaptive.{AdaptiveShuffleDependency, AdaptiveShuffleHandle}
import org.apache.spark.shuffle.adaptive.metrics.CombineCounters
import org.apache.spark.shuffle.adaptive.compat.SqlExchanges
import org.apache.spark.shuffle.adaptive.combine.sql.{FoldedStatistics, KeyHashPartitioner, SqlCombine}

/**
 * Spark's shuffle exchange of a hash partitioning, on the plugin: the same partitioning,
 * serializer, metrics and reads as [[ShuffleExchangeExec]], and its canonical form, so exchange
 * reuse, AQE's query stages, coalescing and skew handling treat it as Spark's. Its shuffle's
 * dependency is an [[AdaptiveShuffleDependency]], which says to the shuffle manager what differs:
 *  - `combining` (a partial aggregate's output): its map outputs are combined per executor
 *    before reduce tasks read them (local reduction, see combine/), as the aggregate's next step
 *    merges rows of one key ([[SqlCombine]]), so that step's result is the same;
 *  - otherwise its reduce tasks run where their partitions were merged, in mode=push
 *    ([[OwnerPlacedShuffledRowRDD]]), and its blocks are pushed larger, as they cross once;
 *    exchanges a join reads together share a `coPartitionKey` ([[PluginExchanges]]), and get
 *    the same owners.
 */
case class AdaptiveShuffleExchangeExec(
    override val outputPartitioning: HashPartitioning,
    child: SparkPlan,
    shuffleOrigin: ShuffleOrigin,
    advisoryPartitionSize: Option[Long],
    combining: Boolean,
    coPartitionKey: Option[Long] = None)
    extends ShuffleExchangeLike {

  private lazy val writeMetrics =
    SQLShuffleWriteMetricsReporter.createShuffleWriteMetrics(sparkContext)
  private lazy val readMetrics =
    SQLShuffleReadMetricsReporter.createShuffleReadMetrics(sparkContext)
  override lazy val metrics = Map(
    "dataSize" -> SQLMetrics.createSizeMetric(sparkContext, "data size"),
    "numPartitions" -> SQLMetrics.createMetric(sparkContext, "number of partitions")) ++
    readMetrics ++ writeMetrics

  override def nodeName: String = if (combining) "CombiningExchange" else "AdaptiveExchange"

  private lazy val serializer: Serializer =
    new UnsafeRowSerializer(child.output.size, longMetric("dataSize"))

  @transient lazy val inputRDD: RDD[InternalRow] = child.execute()

  @transient
  override lazy val mapOutputStatisticsFuture: Future[MapOutputStatistics] =
    if (inputRDD.getNumPartitions == 0) Future.successful(null)
    else if (!combining) sparkContext.submitMapStage(shuffleDependency)
    else
      new FoldedStatistics(
        sparkContext.submitMapStage(shuffleDependency),
        FoldedStatistics.spread(_, folded._1))

  /**
   * What map tasks folded so far instead of writing it: the bytes and the rows of the records
   * they made (each a row the reduce side reads), as the driver's accumulators have them.
   */
  private def folded: (Long, Long) = shuffleDependency.shuffleHandle match {
    case h: AdaptiveShuffleHandle[_, _, _] =>
      val combine = h.fetchMetrics.value.combine
      (
        combine(CombineCounters.NewRecordBytes),
        combine(CombineCounters.RowsIn) - combine(CombineCounters.RowsMerged))
    case _ => (0L, 0L)
  }

  override def numMappers: Int = shuffleDependency.rdd.getNumPartitions

  override def numPartitions: Int = shuffleDependency.partitioner.numPartitions

  override def getShuffleRDD(partitionSpecs: Array[ShufflePartitionSpec]): RDD[InternalRow] =
    new OwnerPlacedShuffledRowRDD(shuffleDependency, readMetrics, partitionSpecs)

  // What was written and what was folded, which the reduce side reads too.
  override def runtimeStatistics: Statistics = {
    val (foldedBytes, foldedRows) = if (combining) folded else (0L, 0L)
    val dataSize = metrics("dataSize").value + foldedBytes
    val rowCount =
      metrics(SQLShuffleWriteMetricsReporter.SHUFFLE_RECORDS_WRITTEN).value + foldedRows
    Statistics(dataSize, Some(rowCount))
  }

  override def shuffleId: Int = shuffleDependency.shuffleId

  /**
   * Spark's exchange copies every row before the shuffle under any shuffle manager but its own
   * sort shuffle, whose writers (as this plugin's, which writes with them and copies the rows it
   * keeps) serialize each row before they take the next, so a reused row is safe: the plugin
   * takes an exchange only where Spark's serialized writer would ([[PluginExchanges]]).
   */
  @transient
  lazy val shuffleDependency: ShuffleDependency[Int, InternalRow, InternalRow] = {
    val attributes = child.output
    val partitioning = outputPartitioning
    // A combining exchange keys each row by its keys' hash, which the fold probes with, and
    // takes the partition from it as the expression would (a row is hashed once).
    val (key, partitioner) = partitioning.partitionIdExpression match {
      case pmod: Pmod if combining =>
        (pmod.left, new KeyHashPartitioner(partitioning.numPartitions))
      case partitionId => (partitionId, new PartitionIdPassthrough(partitioning.numPartitions))
    }
    val keyed = inputRDD.mapPartitionsWithIndexInternal { (_, rows) =>
      val keyOf = UnsafeProjection.create(key :: Nil, attributes)
      val pair = new MutablePair[Int, InternalRow]
      rows.map(row => pair.update(keyOf(row).getInt(0), row))
    }
    val combine =
      if (!combining) None
      else
        Some(
          SqlCombine
            .of(child)
            .getOrElse(throw new IllegalStateException(s"$nodeName over rows that do not combine")))
    val dep = new AdaptiveShuffleDependency[Int, InternalRow, InternalRow](
      keyed,
      partitioner,
      serializer,
      ShuffleExchangeExec.createShuffleWriteProcessor(writeMetrics),
      combine,
      reducedAtOwners = !combining,
      coPartitionKey)
    metrics("numPartitions").set(dep.partitioner.numPartitions)
    val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
    SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, metrics("numPartitions") :: Nil)
    dep
  }

  protected override def doExecute(): RDD[InternalRow] =
    new OwnerPlacedShuffledRowRDD(shuffleDependency, readMetrics)

  // As Spark's exchange: reuse may put either in the other's place, their results being equal.
  override def doCanonicalize(): SparkPlan =
    SqlExchanges
      .exchange(outputPartitioning, child, shuffleOrigin, advisoryPartitionSize)
      .canonicalized

  override protected def withNewChildInternal(newChild: SparkPlan): AdaptiveShuffleExchangeExec =
    copy(child = newChild)
}
