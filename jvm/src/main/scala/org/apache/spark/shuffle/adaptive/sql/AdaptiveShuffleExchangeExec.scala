package org.apache.spark.shuffle.adaptive.sql

import scala.concurrent.Future

import org.apache.spark.{MapOutputStatistics, Partition, PartitionIdPassthrough, ShuffleDependency, SparkEnv, TaskContext}
import org.apache.spark.rdd.RDD
import org.apache.spark.serializer.Serializer
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.plans.logical.Statistics
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.catalyst.plans.physical.{HashPartitioning, Partitioning}
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.execution.{ShufflePartitionSpec, SparkPlan, SQLExecution, UnsafeRowSerializer}
import org.apache.spark.sql.execution.exchange.{ShuffleExchangeExec, ShuffleExchangeLike, ShuffleOrigin}
import org.apache.spark.sql.execution.metric.{SQLMetrics, SQLShuffleReadMetricsReporter, SQLShuffleWriteMetricsReporter}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.util.MutablePair
import org.apache.spark.shuffle.adaptive.combine.{CombinableRecords, CombineSpec}
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager
import org.apache.spark.shuffle.adaptive.compat.{ConfiguredShuffleManager, SqlExchanges}
import org.apache.spark.shuffle.adaptive.push.reduce.ReducedAtOwners

/**
 * Spark's shuffle exchange on the plugin: the same partitioning, serializer, metrics and reads as
 * [[ShuffleExchangeExec]], and its canonical form, so exchange reuse, AQE's query stages,
 * coalescing and skew handling treat it as Spark's. Two things differ:
 *  - `combining` (a partial aggregate's output): its map outputs are combined per executor
 *    before reduce tasks read them (local reduction, see combine/). Its map side marks the
 *    aggregate's rows as combinable ([[CombinableRows]]), which the shuffle manager finds when
 *    the shuffle is registered. Its output is that of Spark's exchange with rows of one key
 *    merged as the aggregate's next step merges them, so that step's result is the same;
 *  - its reduce tasks prefer to run where their partitions were merged, in mode=push
 *    ([[OwnerPlacedShuffledRowRDD]]); exchanges a join reads together get the same owners
 *    ([[AdaptiveExchanges.CoPartitionKey]]). Its map side marks its rows so
 *    ([[ReducedAtOwnersRows]]), and the shuffle pushes larger blocks, as they cross once.
 */
case class AdaptiveShuffleExchangeExec(
    override val outputPartitioning: Partitioning,
    child: SparkPlan,
    shuffleOrigin: ShuffleOrigin,
    advisoryPartitionSize: Option[Long],
    combining: Boolean)
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

  @transient lazy val inputRDD: RDD[InternalRow] =
    if (!combining) new ReducedAtOwnersRows(child.execute())
    else {
      val spec = AdaptiveShuffleExchangeExec
        .combineSpec(child)
        .getOrElse(throw new IllegalStateException(s"$nodeName over rows that do not combine"))
      new CombinableRows(child.execute(), spec)
    }

  @transient
  override lazy val mapOutputStatisticsFuture: Future[MapOutputStatistics] =
    if (inputRDD.getNumPartitions == 0) Future.successful(null)
    else sparkContext.submitMapStage(shuffleDependency)

  override def numMappers: Int = shuffleDependency.rdd.getNumPartitions

  override def numPartitions: Int = shuffleDependency.partitioner.numPartitions

  override def getShuffleRDD(partitionSpecs: Array[ShufflePartitionSpec]): RDD[InternalRow] =
    new OwnerPlacedShuffledRowRDD(shuffleDependency, readMetrics, partitionSpecs)

  override def runtimeStatistics: Statistics = {
    val dataSize = metrics("dataSize").value
    val rowCount = metrics(SQLShuffleWriteMetricsReporter.SHUFFLE_RECORDS_WRITTEN).value
    Statistics(dataSize, Some(rowCount))
  }

  override def shuffleId: Int = shuffleDependency.shuffleId

  @transient
  lazy val shuffleDependency: ShuffleDependency[Int, InternalRow, InternalRow] = {
    val dep = outputPartitioning match {
      case hash: HashPartitioning if rowsNeedNoCopy(hash.numPartitions) =>
        val attributes = child.output
        val withPartitionIds = inputRDD.mapPartitionsWithIndexInternal { (_, rows) =>
          val partitionOf = UnsafeProjection.create(hash.partitionIdExpression :: Nil, attributes)
          val pair = new MutablePair[Int, InternalRow]
          rows.map(row => pair.update(partitionOf(row).getInt(0), row))
        }
        new ShuffleDependency[Int, InternalRow, InternalRow](
          withPartitionIds,
          new PartitionIdPassthrough(hash.numPartitions),
          serializer,
          shuffleWriterProcessor = ShuffleExchangeExec.createShuffleWriteProcessor(writeMetrics))
      case _ =>
        ShuffleExchangeExec.prepareShuffleDependency(
          inputRDD,
          child.output,
          outputPartitioning,
          serializer,
          writeMetrics)
    }
    getTagValue(AdaptiveExchanges.CoPartitionKey).foreach { key =>
      ConfiguredShuffleManager.of(SparkEnv.get) match {
        case manager: AdaptiveShuffleManager =>
          manager.driver.foreach(_.coPartitioned(dep.shuffleId, key))
        case _ =>
      }
    }
    metrics("numPartitions").set(dep.partitioner.numPartitions)
    val executionId = sparkContext.getLocalProperty(SQLExecution.EXECUTION_ID_KEY)
    SQLMetrics.postDriverMetricUpdates(sparkContext, executionId, metrics("numPartitions") :: Nil)
    dep
  }

  /**
   * Spark's exchange copies every row before the shuffle under any shuffle manager but its own
   * sort shuffle, whose writers (as this plugin's, which writes with them and copies the rows it
   * keeps) serialize each row before they take the next, so a reused row is safe: below the
   * serialized writer's partition limit, and with none of the checksums SQL computes of the
   * rows themselves, whose dependency only Spark's exchange makes.
   */
  private def rowsNeedNoCopy(numPartitions: Int): Boolean = {
    val sql = SQLConf.get
    numPartitions <= SortShuffleManager.MAX_SHUFFLE_OUTPUT_PARTITIONS_FOR_SERIALIZED_MODE &&
    !Seq(AdaptiveShuffleExchangeExec.RowChecksums, AdaptiveShuffleExchangeExec.FullRetryOnMismatch)
      .exists(sql.getConfString(_, "false").toBoolean)
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

private[spark] object AdaptiveShuffleExchangeExec {

  // Spark SQL's keys (since 4.1) for checksums of a shuffle's rows, by name: older releases
  // lack them.
  private val RowChecksums = "spark.sql.shuffle.orderIndependentChecksum.enabled"
  private val FullRetryOnMismatch =
    "spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch"

  /** How the rows of `child` (a partial aggregate, compiled or not) combine, if they do. */
  def combineSpec(child: SparkPlan): Option[CombineSpec] = SqlCombine.of(child)
}

/**
 * The rows of `prev`, unchanged, in an RDD of its own that carries a mark for the shuffle
 * manager ([[org.apache.spark.shuffle.adaptive.lineage.RddMarks]]).
 */
private[spark] sealed abstract class MarkedRows(prev: RDD[InternalRow])
    extends RDD[InternalRow](prev) {

  override protected def getPartitions: Array[Partition] = prev.partitions

  override def compute(split: Partition, context: TaskContext): Iterator[InternalRow] =
    prev.iterator(split, context)
}

/** Marked as combining by `combineSpec`. */
private[spark] final class CombinableRows(prev: RDD[InternalRow], val combineSpec: CombineSpec)
    extends MarkedRows(prev)
    with CombinableRecords

/** Marked as read by reduce tasks at their owners. */
private[spark] final class ReducedAtOwnersRows(prev: RDD[InternalRow])
    extends MarkedRows(prev)
    with ReducedAtOwners
