package org.apache.spark.shuffle.adaptive.combine.sql

import scala.collection.mutable
import scala.reflect.ClassTag

import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.serializer.SerializationStream
import org.apache.spark.sql.{Column, DataFrame, Encoder, Encoders, Row, SparkSession}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.Partial
import org.apache.spark.sql.execution.SimpleMode
import org.apache.spark.sql.execution.metric.SQLShuffleWriteMetricsReporter
import org.apache.spark.sql.execution.adaptive.{AdaptiveSparkPlanHelper, ShuffleQueryStageExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.expressions.Aggregator
import org.apache.spark.sql.functions._
import org.apache.spark.shuffle.adaptive.{AdaptiveShuffleManager, PluginCounters}
import org.apache.spark.shuffle.adaptive.combine.Budget
import org.apache.spark.shuffle.adaptive.sql.{AdaptiveShuffleExchangeExec, AdaptiveShuffleExtensions, ExchangesExplained}

/**
 * Each aggregate function Spark declares, combined per executor (a local SparkSession under the
 * plugin: its map tasks share one executor, so every key's rows of eight map outputs merge),
 * against the same aggregate over one map output (nothing to merge): the same result.
 */
class SqlCombineSuite extends AnyFunSuite with BeforeAndAfterAll with AdaptiveSparkPlanHelper {

  private var spark: SparkSession = _

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark = SparkSession
      .builder()
      .master("local[2]")
      .appName("SqlCombineSuite")
      .config(SHUFFLE_MANAGER.key, classOf[AdaptiveShuffleManager].getName)
      .config("spark.sql.extensions", classOf[AdaptiveShuffleExtensions].getName)
      .config("spark.sql.shuffle.partitions", "4")
      .config("spark.sql.adaptive.enabled", "true")
      .config("spark.sql.extendedExplainProviders", classOf[ExchangesExplained].getName)
      .config("spark.ui.enabled", "false")
      .getOrCreate()
  }

  override def afterAll(): Unit =
    try if (spark != null) spark.stop()
    finally super.afterAll()

  /** Eight map outputs, each with every key (0 to 29) many times. */
  private def table(partitions: Int): DataFrame =
    spark
      .range(0, 4000, 1, 8)
      .select(
        (col("id") % 30).as("k"),
        col("id").as("v"),
        (col("id") % 13).cast("double").as("d"),
        concat(lit("s"), (col("id") % 17).cast("string")).as("s"),
        (col("id") % 7).cast("decimal(30,2)").as("dec"),
        (col("id") % 3 === 0).as("b"),
        when(col("id") % 11 === 0, lit(null)).otherwise(col("id")).as("n"))
      .coalesce(partitions)

  /** Rows folded so far that met a key held (none before the first shuffle). */
  private def merged: Long = {
    val sc = spark.sparkContext
    val manager = sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]
    if (manager.driver.isEmpty) 0L
    else
      PluginCounters
        .application(sc)("combine")
        .asInstanceOf[Map[String, Any]]("rows_merged")
        .asInstanceOf[Long]
  }

  /** Rows of `aggregates` by key, sorted, doubles rounded (merge order moves their last bits). */
  private def result(df: DataFrame, aggregates: Seq[Column]): Seq[Seq[Any]] =
    df.groupBy("k")
      .agg(aggregates.head, aggregates.tail: _*)
      .collect()
      .toSeq
      .map { row =>
        row.toSeq.map {
          case d: Double => BigDecimal(d).setScale(6, BigDecimal.RoundingMode.HALF_UP)
          case other => other
        }
      }
      .sortBy(_.head.toString.toLong)

  private def assertCombinedAlike(aggregates: Column*): Unit = {
    val before = merged
    val combined = result(table(8), aggregates)
    assert(merged > before, s"no rows merged for $aggregates")
    val plan = table(8).groupBy("k").agg(aggregates.head, aggregates.tail: _*)
    plan.collect()
    assert(plan.queryExecution.executedPlan.toString.contains("CombiningExchange"))
    assert(combined === result(table(1), aggregates))
    assert(combined.size === 30)
  }

  /**
   * `data`'s rows grouped by `keys` into `aggregates`, sorted, after asserting that rows were
   * merged and that they equal the same aggregate over one map output (nothing to merge).
   */
  private def assertGroupedAlike(
      data: DataFrame,
      keys: Seq[String],
      aggregates: Column*): Seq[Row] = {
    def run(input: DataFrame): Seq[Row] =
      input
        .groupBy(keys.map(col): _*)
        .agg(aggregates.head, aggregates.tail: _*)
        .collect()
        .toSeq
        .sortBy(_.toString)
    val before = merged
    val combined = run(data)
    assert(merged > before, s"no rows merged grouping by $keys")
    assert(combined === run(data.coalesce(1)))
    combined
  }

  test("sum, count, min, max, avg of numbers and decimals") {
    assertCombinedAlike(
      sum("v"),
      count("v"),
      count(lit(1)),
      min("v"),
      max("v"),
      avg("v"),
      sum("dec"),
      avg("dec"),
      min("dec"),
      max("d"),
      sum("n"),
      count("n"))
  }

  test("min, max, first and last of strings and of values equal within a key") {
    assertCombinedAlike(
      min("s"),
      max("s"),
      first(col("k") * 2),
      last(col("k") * 3),
      first("n", ignoreNulls = true).isNotNull)
  }

  test("bit and boolean operations, count_if") {
    assertCombinedAlike(
      bit_and(col("v")),
      bit_or(col("v")),
      bit_xor(col("v")),
      bool_and(col("b")),
      bool_or(col("b")),
      count_if(col("b")))
  }

  test("variance, standard deviation, skewness, kurtosis, correlation, covariance") {
    assertCombinedAlike(
      stddev("d"),
      variance("d"),
      var_pop("d"),
      stddev_pop("d"),
      skewness("d"),
      kurtosis("d"),
      corr("d", "v"),
      covar_samp("d", "v"),
      covar_pop("d", "v"))
  }

  test("approx_count_distinct, collect_list, collect_set, percentile, median, mode") {
    assertCombinedAlike(
      approx_count_distinct("v"),
      size(collect_list("v")),
      sort_array(collect_set("s")),
      percentile(col("v"), lit(0.5)),
      median(col("d")),
      percentile_approx(col("v"), lit(0.5), lit(1000000)),
      mode(col("k") * 2))
  }

  test("max_by, min_by, and a typed aggregator") {
    val sumOfLongs = udaf(new Aggregator[Long, Long, Long] {
      override def zero: Long = 0L
      override def reduce(b: Long, a: Long): Long = b + a
      override def merge(b1: Long, b2: Long): Long = b1 + b2
      override def finish(r: Long): Long = r
      override def bufferEncoder: Encoder[Long] = Encoders.scalaLong
      override def outputEncoder: Encoder[Long] = Encoders.scalaLong
    })
    assertCombinedAlike(
      max_by(col("d"), col("v")),
      min_by(col("d"), col("v")),
      sumOfLongs(col("v")))
  }

  test("distinct aggregates: the key-only exchange drops duplicates") {
    assertCombinedAlike(countDistinct("s"), sum_distinct(col("d")), count(lit(1)))
  }

  test("keys of strings, decimals, structs, nulls and NaN") {
    // Every key of the 30 in each map output.
    val name = concat(lit("s"), (col("k") % 17).cast("string"))
    val df = table(8).select(
      when(col("k") % 5 === 0, lit(null)).otherwise(name).as("ks"),
      (col("k") % 7).cast("decimal(30,2)").as("dec"),
      struct(col("k") % 3, name).as("st"),
      when(col("k") % 4 === 0, lit(Double.NaN)).otherwise((col("k") % 13).cast("double")).as("kd"),
      col("v"))
    assertGroupedAlike(df, Seq("ks", "dec", "st", "kd"), sum("v"), count(lit(1)))
  }

  test("keys stored in the row itself, of every width, with nulls: compared where they lie") {
    val df = table(8).select(
      (col("k") % 3).cast("byte").as("kb"),
      when(col("k") % 7 === 0, lit(null)).otherwise((col("k") % 5).cast("short")).as("ks"),
      (col("k") % 2 === 0).as("kbool"),
      when(col("k") % 4 === 0, lit(null)).otherwise(col("k").cast("int")).as("ki"),
      date_add(lit("2024-01-01").cast("date"), (col("k") % 6).cast("int")).as("kdate"),
      (col("k") % 3).cast("float").as("kf"),
      when(col("k") % 9 === 0, lit(null))
        .otherwise((col("k") / 4).cast("decimal(10,2)"))
        .as("kdec"),
      col("k").cast("timestamp").as("kts"),
      col("v"))
    val keys = Seq("kb", "ks", "kbool", "ki", "kdate", "kf", "kdec", "kts")
    assert(assertGroupedAlike(df, keys, sum("v"), count(lit(1)), max("v")).size === 30)
    // Keys that differ only where one is null are not taken for one.
    val nulls = spark
      .range(0, 4000, 1, 8)
      .select(
        when(col("id") % 2 === 0, lit(null)).otherwise(lit(0L)).as("a"),
        when(col("id") % 3 === 0, lit(null)).otherwise(lit(0)).as("b"),
        col("id").as("v"))
    assert(assertGroupedAlike(nulls, Seq("a", "b"), sum("v"), count(lit(1))).size === 4)
  }

  test("300,000 keys folded twice: keys whose hashes collide stay apart") {
    val query = spark
      .range(0, 10, 1, 2)
      .select(
        when(col("id") % 2 === 0, lit(null)).otherwise(col("id")).as("a"),
        col("id").cast("int").as("b"),
        col("id").as("v"))
      .groupBy("a", "b")
      .agg(sum("v"))
    val partial = query.queryExecution.sparkPlan.collectFirst {
      case agg: BaseAggregateExec if agg.aggregateExpressions.forall(_.mode == Partial) => agg
    }.get
    val spec = SqlCombine.explained(partial).toOption.get
    val keys = 300000
    val toRow = UnsafeProjection.create(partial.output.map(_.dataType).toArray)
    // A partial aggregate's rows: key (a, b) = (null for even k, else k; k), sum k.
    val rows = (0 until keys).map { k =>
      toRow(InternalRow(if (k % 2 == 0) null else k.toLong, k, k.toLong)).copy()
    }
    val unbounded = new Budget {
      override def reserve(bytes: Long): Boolean = true
      override def release(bytes: Long): Unit = ()
    }
    locally {
      val engine = spec.newEngine()
      val into = engine.newCombined(unbounded)
      (1 to 2).foreach { output =>
        val task = engine.newTaskRecords(unbounded, 1)
        // Four keys to a hash: a comparison that missed a difference would merge them.
        rows.zipWithIndex.foreach { case (row, k) => assert(task.keep(0, ((k / 4) * 7919, row))) }
        val count = engine.fold(task, 0, 0, into)
        assert(
          (count.rows, count.merged, count.next) === ((keys, if (output == 1) 0 else keys, keys)))
        task.release()
      }
      val written = mutable.ArrayBuffer.empty[(Long, Long)]
      engine.write(
        0,
        into,
        new SerializationStream {
          private var key = true
          override def writeObject[T: ClassTag](t: T): SerializationStream = {
            if (!key) {
              val r = t.asInstanceOf[UnsafeRow]
              written += ((r.getInt(1).toLong, r.getLong(2)))
            }
            key = !key
            this
          }
          override def flush(): Unit = ()
          override def close(): Unit = ()
        })
      assert(written.size === keys)
      assert(written.forall { case (k, total) => total == 2 * k })
    }
  }

  /** Rows folded so far (none before the first shuffle). */
  private def folded: Long =
    if (spark.sparkContext.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager].driver.isEmpty)
      0L
    else
      PluginCounters
        .application(spark.sparkContext)("combine")
        .asInstanceOf[Map[String, Any]]("rows_in")
        .asInstanceOf[Long]

  test(
    "folded rows are not written: the files hold only the judging map outputs' rows, and the " +
      "statistics AQE plans by count what was folded") {
    val (mergedBefore, foldedBefore) = (merged, folded)
    val grouped = table(8).groupBy("k").agg(sum("v"), count("v"))
    assert(grouped.collect().length === 30)
    assert(merged > mergedBefore)
    val exchange = collectFirst(grouped.queryExecution.executedPlan) {
      case s: ShuffleQueryStageExec if s.shuffle.isInstanceOf[AdaptiveShuffleExchangeExec] => s
    }.get
    val plugin = exchange.shuffle.asInstanceOf[AdaptiveShuffleExchangeExec]
    // Each of the eight map outputs has each of the 30 keys once: its rows are in its file
    // (the first ones on the executor judge whether folding pays, writing theirs) or folded.
    val written = plugin.metrics(SQLShuffleWriteMetricsReporter.SHUFFLE_RECORDS_WRITTEN).value
    assert(written + folded - foldedBefore === 8 * 30)
    assert(written >= 2 * 30 && written < 8 * 30, written)
    assert(exchange.mapStats.get.bytesByPartitionId.sum > 0)
    assert(plugin.runtimeStatistics.rowCount.exists(_ > 0))
  }

  test(
    "a combining exchange places rows as Spark's hash partitioning does: a join over the " +
      "aggregate finds every key in Spark's exchange of the other side") {
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try {
      val sums = table(8).groupBy("k").agg(sum("v").as("total"))
      val names = spark.range(0, 30, 1, 3).select(col("id").as("k"), (col("id") * 10).as("w"))
      val joined = sums.join(names, "k")
      val rows = joined.collect()
      val plan = joined.queryExecution.executedPlan.toString
      assert(plan.contains("CombiningExchange") && plan.contains("Exchange hashpartitioning"), plan)
      val expected = (0L until 4000L).groupBy(_ % 30).map { case (k, ids) => k -> ids.sum }
      assert(rows.map(r => r.getLong(0) -> r.getLong(1)).toMap === expected)
      assert(rows.forall(r => r.getLong(2) == r.getLong(0) * 10))
    } finally {
      spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
      spark.conf.set("spark.sql.adaptive.enabled", "true")
    }
  }

  test("a global aggregate and a join's exchanges are Spark's") {
    val global = table(8).agg(sum("v"))
    global.collect()
    assert(!global.queryExecution.executedPlan.toString.contains("CombiningExchange"))
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    try {
      val joined = table(8).join(table(8).select(col("k"), col("v").as("w")), "k")
      joined.count()
      assert(!joined.queryExecution.executedPlan.toString.contains("CombiningExchange"))
    } finally spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
  }

  test("explain says of each exchange whether it is the plugin's, or why it stays Spark's") {
    def explained(df: DataFrame): String = df.queryExecution.explainString(SimpleMode)
    val grouped = explained(table(8).groupBy("k").agg(sum("v"), count("v")))
    assert(grouped.contains("== Extended Information (pyspark-shuffle) =="), grouped)
    assert(
      grouped.contains("CombiningExchange hashpartitioning(k") &&
        grouped.contains("combined per executor before reduce tasks read them"),
      grouped)
    val global = explained(table(8).agg(sum("v")))
    assert(
      global.contains(
        "Exchange SinglePartition: Spark's: SinglePartition: the plugin's exchange takes hash " +
          "partitionings"),
      global)
    val repartitioned = explained(table(8).repartition(4, col("k")).select("k"))
    assert(
      repartitioned.contains("Spark's: its rows are not an aggregate's to combine"),
      repartitioned)
  }
}
