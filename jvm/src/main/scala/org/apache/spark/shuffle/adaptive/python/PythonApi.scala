package org.apache.spark.shuffle.adaptive.python

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.module.scala.DefaultScalaModule

import org.apache.spark.{SparkContext, SparkEnv}
import org.apache.spark.rdd.RDD
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.types.{BinaryType, IntegerType, StructField, StructType}
import org.apache.spark.shuffle.adaptive.{AdaptiveShuffleManager, DriverServices}
import org.apache.spark.shuffle.adaptive.compat.ConfiguredShuffleManager
import org.apache.spark.shuffle.adaptive.dummy.{BlockTransfer, DummyRDD, DummySpec, KeyedRows, PinnedPlacement, PinnedRDD, SkewedTables}
import org.apache.spark.shuffle.adaptive.metrics.{FetchMemoryProbe, MetricsReport, ShuffleReadReport}

/**
 * The one class the Python package calls (through py4j). Arguments are plain values; results
 * are DataFrames or JSON strings, so Python never touches Scala collections.
 */
object PythonApi {

  private val json = new ObjectMapper().registerModule(DefaultScalaModule)

  /**
   * The plugin's counters for the application so far, as JSON
   * `{"manager": class, "application": {...}, "executors": {id: {...}}, "push": {shuffle id:
   * {...}}, "losses": {...}}` (see FetchCounters, ShuffleMergeSummary and LostMapOutputs; `push`
   * is empty unless mode=push, `losses` unless push.reliability=replicated);
   * `application` is empty
   * when another shuffle manager runs. Waits until the listener has seen
   * every event already posted, so the counters include all finished tasks.
   */
  def metricsJson(sc: SparkContext): String = {
    val manager = ConfiguredShuffleManager.of(SparkEnv.get)
    val snapshot = manager match {
      case adaptive: AdaptiveShuffleManager =>
        sc.listenerBus.waitUntilEmpty()
        adaptive.driver.fold(DriverServices.noMetrics)(_.metrics)
      case _ => MetricsReport.empty()
    }
    json.writeValueAsString(snapshot + ("manager" -> manager.getClass.getName))
  }

  /**
   * From now on the application's counters are also added up apart, as `since_mark` in
   * [[metricsJson]] (the tasks already ended are not in it); nothing under another manager.
   */
  def markMetrics(sc: SparkContext): Unit = ConfiguredShuffleManager.of(SparkEnv.get) match {
    case adaptive: AdaptiveShuffleManager =>
      sc.listenerBus.waitUntilEmpty()
      adaptive.driver.foreach(_.fetchMetrics.mark())
    case _ =>
  }

  /**
   * The plugin's skew-report data, as JSON: a list of the latest [[ShuffleReadReport]] of each of
   * the newest shuffles read (empty when another shuffle manager runs).
   */
  def shuffleReportsJson(sc: SparkContext): String = {
    sc.listenerBus.waitUntilEmpty()
    val reports = ConfiguredShuffleManager.of(SparkEnv.get) match {
      case adaptive: AdaptiveShuffleManager =>
        adaptive.driver.fold(Seq.empty[ShuffleReadReport])(_.readReports.reports)
      case _ => Nil
    }
    json.writeValueAsString(reports)
  }

  /**
   * The peaks of the direct memory each executor's shuffle reads held, as JSON `{executor id:
   * {"netty_pooled_bytes", "netty_direct_bytes"}}`, under any shuffle manager (empty unless
   * `spark.plugins` has [[FetchMemoryProbe]]).
   */
  def fetchMemoryJson(): String = json.writeValueAsString(FetchMemoryProbe.peaks)

  /**
   * What each executor held over time, as JSON `{executor id: {"bucket_ms", "start_ms": [...],
   * field: {"max": [...], "mean": [...]}}}` ([[FetchMemoryProbe.series]]; empty unless
   * `spark.plugins` has [[FetchMemoryProbe]]).
   */
  def fetchMemorySeriesJson(): String = json.writeValueAsString(FetchMemoryProbe.series)

  /** The class of the shuffle manager Spark instantiated from `spark.shuffle.manager`. */
  def shuffleManagerClass(): String =
    ConfiguredShuffleManager.of(SparkEnv.get).getClass.getName

  /**
   * Runs the DummyRDD shuffle (every chunk to its drawn destination) and returns, as JSON, the
   * bytes and chunks each destination received and the job's wall time. With `pinExecutors`
   * > 0, its tasks run where [[PinnedPlacement]] puts them on that many executors, the hottest
   * reduce partition on the `hotExecutor`-th (from 1); the caller sets a long locality wait.
   */
  def runDummyShuffle(
      sc: SparkContext,
      totalBytes: Long,
      partitionBytes: Long,
      skew: Double,
      seed: Long,
      compressible: Boolean,
      pinExecutors: Int,
      hotExecutor: Int): String = {
    val dummy = new DummyRDD(sc, DummySpec(totalBytes, partitionBytes, skew, seed, compressible))
    val placement =
      if (pinExecutors > 0) Some(PinnedPlacement.of(sc, pinExecutors, hotExecutor)) else None
    val maps =
      placement.fold[RDD[(Int, Array[Byte])]](dummy)(p => new PinnedRDD(dummy, p.mapLocations))
    val shuffled = dummy.shuffled(maps)
    val reduces =
      placement.fold[RDD[(Int, Array[Byte])]](shuffled)(p =>
        new PinnedRDD(shuffled, p.reduceLocations))
    val start = System.nanoTime()
    val received = reduces
      .mapPartitionsWithIndex { (destination, chunks) =>
        var bytes = 0L
        var count = 0L
        chunks.foreach { case (_, payload) => bytes += payload.length; count += 1 }
        Iterator((destination, bytes, count, SparkEnv.get.executorId))
      }
      .collect()
      .sortBy(_._1)
    val seconds = (System.nanoTime() - start) / 1e9
    json.writeValueAsString(
      Map(
        "num_partitions" -> dummy.spec.numPartitions,
        "destination_bytes" -> received.map(_._2).toSeq,
        "destination_chunks" -> received.map(_._3).toSeq,
        "destination_executors" -> received.map(_._4).toSeq,
        "wall_s" -> seconds))
  }

  /** The DummyRDD's chunks before the shuffle: `destination INT, payload BINARY`. */
  def dummyFrame(
      spark: SparkSession,
      totalBytes: Long,
      partitionBytes: Long,
      skew: Double,
      seed: Long,
      compressible: Boolean): DataFrame = {
    val dummy = new DummyRDD(
      spark.sparkContext,
      DummySpec(totalBytes, partitionBytes, skew, seed, compressible))
    val schema = StructType(
      Seq(
        StructField("destination", IntegerType, nullable = false),
        StructField("payload", BinaryType, nullable = false)))
    spark.createDataFrame(
      dummy.map { case (destination, payload) => org.apache.spark.sql.Row(destination, payload) },
      schema)
  }

  def skewedFact(
      spark: SparkSession,
      rows: Long,
      numKeys: Int,
      skew: Double,
      payloadBytes: Int,
      partitions: Int,
      seed: Long): DataFrame =
    SkewedTables.fact(spark, rows, numKeys, skew, payloadBytes, partitions, seed)

  def skewedDimension(spark: SparkSession, numKeys: Int, partitions: Int): DataFrame =
    SkewedTables.dimension(spark, numKeys, partitions)

  /** [[KeyedRows.table]]: `key BIGINT, value BIGINT`. */
  def keyedRows(
      spark: SparkSession,
      rows: Long,
      numKeys: Long,
      partitions: Int,
      seed: Long): DataFrame =
    KeyedRows.table(spark, rows, numKeys, partitions, seed)

  /** [[KeyedRows.sumsByKey]] (an RDD reduceByKey), as JSON `{"keys": n, "checksum": c}`. */
  def keyedSumsJson(
      sc: SparkContext,
      rows: Long,
      numKeys: Long,
      partitions: Int,
      reducers: Int,
      seed: Long): String = {
    val (keys, checksum) = KeyedRows.sumsByKey(sc, rows, numKeys, partitions, reducers, seed)
    json.writeValueAsString(Map("keys" -> keys, "checksum" -> checksum))
  }

  /**
   * The block-transfer microbenchmark ([[BlockTransfer]]): map outputs on executor `serving`,
   * read by reduce tasks on `reading`; JSON with bytes, seconds and both executors' CPU seconds.
   */
  def blockTransferJson(
      sc: SparkContext,
      serving: String,
      reading: String,
      maps: Int,
      reducers: Int,
      blockBytes: Int): String = {
    val r = BlockTransfer.run(sc, serving, reading, maps, reducers, blockBytes)
    json.writeValueAsString(
      Map(
        "bytes" -> r.bytes,
        "map_s" -> r.mapSeconds,
        "reduce_s" -> r.reduceSeconds,
        "read_s" -> r.readSeconds,
        "serving_cpu_s" -> r.servingCpuSeconds,
        "reading_cpu_s" -> r.readingCpuSeconds,
        "map_executors" -> r.mapExecutors,
        "reduce_executors" -> r.reduceExecutors))
  }
}
