package org.apache.spark.shuffle.adaptive

import java.util.concurrent.atomic.AtomicInteger

import org.apache.spark.{LocalSparkContext, MapOutputTrackerMaster, Partition, ShuffleDependency, SparkEnv, SparkFunSuite, TaskContext}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.rdd.RDD
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}
import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.execution.exchange.ShuffleExchangeExec
import org.apache.spark.sql.functions._
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{COMBINE_MAX_MEMORY, MODE, PUSH_MAX_BLOCK_SIZE}
import org.apache.spark.shuffle.adaptive.sql.{AdaptiveShuffleExchangeExec, AdaptiveShuffleExtensions}

/**
 * Map tasks Spark runs again never count twice: under the old fetch protocol
 * (`spark.shuffle.useOldFetchProtocol`, where a rerun keeps its first attempt's map id) and the
 * default one, for local reduction (Spark SQL's partial aggregates, an RDD aggregator) and for
 * mode=push, whether the map stage reruns because its files are gone (a reduce task's fetch
 * fails after it sealed some partitions) or because its map outputs were unregistered before
 * any reduce task sealed what the first attempts folded or merged, and when a map task fails
 * after 90% of its rows. One executor (local mode), so every rerun runs where the first attempt
 * did. Local reduction's folds are the only copy of what they hold, and a rerun (a map stage's
 * later attempt, a task's retry) writes its file whole: so no segment of a first attempt is read
 * after a rerun, and a reduce task that finds one holding map outputs it reads with others fails
 * its fetch, which makes Spark run the executor's map tasks again. Under the old fetch protocol
 * local reduction is off.
 *
 * The input: eight map outputs whose 1000 keys repeat (folded and merged); where files go, also
 * one of 400,000 keys, which neither fits the combine memory nor is pushed: its blocks are read
 * from its file, so a reduce task finds it gone.
 */
class RerunMapTasksSuite extends SparkFunSuite with LocalSparkContext with SparkLogsCheck {

  private val rows = 40000L
  private val maps = 8
  private val keys = 1000
  private val wide = 1000000L until 1400000L

  private def start(oldProtocol: Boolean, push: Boolean = false): SparkSession = {
    val spark = SparkSession
      .builder()
      .master("local[2,4]")
      .appName("RerunMapTasksSuite")
      .config(SHUFFLE_MANAGER.key, classOf[AdaptiveShuffleManager].getName)
      .config("spark.sql.extensions", classOf[AdaptiveShuffleExtensions].getName)
      .config("spark.shuffle.useOldFetchProtocol", oldProtocol.toString)
      .config("spark.sql.adaptive.enabled", "false")
      .config("spark.sql.shuffle.partitions", "4")
      .config("spark.ui.enabled", "false")
      .config(MODE.key, if (push) "push" else "pull")
      .config(PUSH_MAX_BLOCK_SIZE.key, "64k")
      .config(COMBINE_MAX_MEMORY.key, "1m")
      // Results travel with the task's status: local mode's block manager, which serves larger
      // ones, is gone from the driver's registry once a fetch failed (the executor is lost).
      .config("spark.task.maxDirectResultSize", "512m")
      .getOrCreate()
    sc = spark.sparkContext
    spark
  }

  override def afterEach(): Unit =
    try {
      SparkSession.clearActiveSession()
      SparkSession.clearDefaultSession()
    } finally super.afterEach()

  /** Each key's (sum, count, min, max) of `id % keys` over ids `[0, rows)`. */
  private val base: Map[Long, (Long, Long, Long, Long)] =
    (0L until rows).groupBy(_ % keys).map { case (k, ids) =>
      k -> ((ids.sum, ids.size.toLong, ids.min, ids.max))
    }

  /** And with the wide map's keys, each its own. */
  private val withWide = base ++ wide.map(k => k -> ((k, 1L, k, k)))

  private def sqlAggregate(spark: SparkSession, withWideMap: Boolean = false): DataFrame = {
    val (modulo, first) = (keys, wide.head)
    val ids = spark.range(0, rows, 1, maps)
    (if (withWideMap) ids.union(spark.range(wide.head, wide.last + 1, 1, 1)) else ids)
      .select(
        when(col("id") < first, col("id") % modulo).otherwise(col("id")).as("k"),
        col("id").as("v"))
      .groupBy("k")
      .agg(sum("v"), count("v"), min("v"), max("v"))
  }

  private def sqlResult(df: DataFrame): Map[Long, (Long, Long, Long, Long)] =
    df.queryExecution.executedPlan
      .executeCollect()
      .map(r => r.getLong(0) -> ((r.getLong(1), r.getLong(2), r.getLong(3), r.getLong(4))))
      .toMap

  /** The shuffle of `df`'s exchange: the plugin's, or Spark's where local reduction is off. */
  private def exchangeOf(df: DataFrame): ShuffleDependency[_, _, _] =
    df.queryExecution.executedPlan
      .collectFirst {
        case e: AdaptiveShuffleExchangeExec => e.shuffleDependency
        case e: ShuffleExchangeExec => e.shuffleDependency
      }
      .getOrElse(fail(s"no exchange in ${df.queryExecution.executedPlan}"))

  /** The input as (key, id) pairs. */
  private def pairs(spark: SparkSession, withWideMap: Boolean): RDD[(Long, Long)] = {
    val (modulo, first) = (keys, wide.head)
    val sc = spark.sparkContext
    val ids = sc.range(0, rows, 1, maps)
    (if (withWideMap) ids.union(sc.range(wide.head, wide.last + 1, 1, 1)) else ids)
      .map(x => (if (x < first) x % modulo else x, x))
  }

  private def reduceByKey(spark: SparkSession, withWideMap: Boolean = false): RDD[(Long, Long)] =
    pairs(spark, withWideMap).reduceByKey(_ + _, 4)

  private def groupByKey(spark: SparkSession, withWideMap: Boolean = false): RDD[(Long, Long)] =
    pairs(spark, withWideMap).groupByKey(4).mapValues(_.sum)

  /** Reads reduce partition 0 of `rdd` only, which seals it where it was combined or merged. */
  private def readFirstPartition(rdd: RDD[_]): Unit =
    sc.runJob(rdd, (rows: Iterator[_]) => rows.size, Seq(0))

  private val sums: Map[Long, Long] = base.map { case (k, (s, _, _, _)) => k -> s }
  private val sumsWithWide: Map[Long, Long] = withWide.map { case (k, (s, _, _, _)) => k -> s }

  /** The nearest shuffle `rdd` reads. */
  private def dependencyOf(rdd: RDD[_]): ShuffleDependency[_, _, _] =
    rdd.dependencies.head match {
      case shuffle: ShuffleDependency[_, _, _] => shuffle
      case narrow => dependencyOf(narrow.rdd)
    }

  /** Map tasks that ran while `body` did. */
  private def mapTasksDuring[T](body: => T): (T, Int) = {
    val ran = new AtomicInteger
    val listener = new SparkListener {
      override def onTaskEnd(end: SparkListenerTaskEnd): Unit =
        if (end.taskType == "ShuffleMapTask") ran.incrementAndGet()
    }
    sc.addSparkListener(listener)
    try {
      val result = body
      sc.listenerBus.waitUntilEmpty()
      (result, ran.get)
    } finally sc.removeSparkListener(listener)
  }

  /** The map stage of `dep`, then its files removed: its reduce tasks' fetches fail. */
  private def mapStageThenRemoveFiles(dep: ShuffleDependency[_, _, _]): Unit = {
    sc.submitMapStage(dep).get()
    val files = sc.env.blockManager.diskBlockManager
      .getAllFiles()
      .filter(f =>
        f.getName.startsWith(s"shuffle_${dep.shuffleId}_") && f.getName.endsWith(".data"))
    assert(files.nonEmpty)
    files.foreach(f => assert(f.delete(), f))
  }

  /**
   * The map stage of `dep` twice, its map outputs unregistered in between (as when they are
   * lost): `between` may read some of them before.
   */
  private def mapStageTwice(dep: ShuffleDependency[_, _, _], between: => Unit = ()): Unit = {
    sc.submitMapStage(dep).get()
    between
    sc.env.mapOutputTracker
      .asInstanceOf[MapOutputTrackerMaster]
      .unregisterAllMapAndMergeOutput(dep.shuffleId)
    sc.submitMapStage(dep).get()
  }

  /** `actual` equals `expected`, or a failure that names a few keys that differ. */
  private def assertRows[V](actual: Map[Long, V], expected: Map[Long, V]): Unit = {
    val wrong = (actual.keySet ++ expected.keySet).toSeq.sorted
      .filter(k => actual.get(k) != expected.get(k))
    assert(
      wrong.isEmpty,
      s"${wrong.size} of ${expected.size} keys differ, e.g. " +
        wrong
          .take(3)
          .map(k => s"$k: ${actual.get(k)} instead of ${expected.get(k)}")
          .mkString("; "))
  }

  private def combine: Map[String, Any] =
    PluginCounters.application(sc)("combine").asInstanceOf[Map[String, Any]]

  private def counter(name: String): Long = combine.getOrElse(name, 0L).asInstanceOf[Long]

  for (oldProtocol <- Seq(true, false)) {
    val protocol = if (oldProtocol) "the old fetch protocol" else "the default fetch protocol"

    // Under the old fetch protocol a map task's attempts share a map id, which names what it
    // folded: local reduction is off, and the files are the sort shuffle's.
    test(
      s"$protocol, local reduction in Spark SQL: map outputs rerun after one partition was read; " +
        "the rerun writes whole files and no segment of the first attempts is read") {
      val spark = start(oldProtocol)
      val df = sqlAggregate(spark)
      mapStageTwice(exchangeOf(df), readFirstPartition(df.queryExecution.executedPlan.execute()))
      val (read, stale) = (counter("segments_read"), counter("stale_segments"))
      assertRows(sqlResult(df), base)
      if (oldProtocol) assert(counter("maps_folded") === 0L && counter("segments_read") === 0L)
      else {
        assert(counter("maps_folded") > 0 && counter("maps_not_folded") >= maps, combine)
        // Every partition's segments hold first attempts only, which Spark no longer keeps.
        assert(counter("segments_read") === read && counter("stale_segments") - stale >= 4, combine)
      }
    }

    test(
      s"$protocol, local reduction of an RDD aggregator: map outputs rerun after one partition " +
        "was read") {
      val spark = start(oldProtocol)
      val rdd = reduceByKey(spark)
      mapStageTwice(dependencyOf(rdd), readFirstPartition(rdd))
      val (read, stale) = (counter("segments_read"), counter("stale_segments"))
      assertRows(rdd.collect().toMap, sums)
      if (oldProtocol) assert(counter("maps_folded") === 0L)
      else {
        assert(counter("maps_folded") > 0, combine)
        assert(counter("segments_read") === read && counter("stale_segments") - stale >= 4, combine)
      }
    }

    test(
      s"$protocol, local reduction: a map stage rerun for lost files, in Spark SQL and of an RDD") {
      val spark = start(oldProtocol)
      val df = sqlAggregate(spark, withWideMap = true)
      mapStageThenRemoveFiles(exchangeOf(df))
      val (result, rerun) = mapTasksDuring(sqlResult(df))
      assert(rerun > maps, "the map tasks did not run again")
      assertRows(result, withWide)
      val rdd = reduceByKey(spark, withWideMap = true)
      mapStageThenRemoveFiles(dependencyOf(rdd))
      val (sumsRead, rddRerun) = mapTasksDuring(rdd.collect().toMap)
      assert(rddRerun > maps)
      assertRows(sumsRead, sumsWithWide)
    }

    test(s"$protocol, mode=push: a map stage rerun for lost files") {
      val spark = start(oldProtocol, push = true)
      val rdd = groupByKey(spark, withWideMap = true)
      mapStageThenRemoveFiles(dependencyOf(rdd))
      val (result, rerun) = mapTasksDuring(rdd.collect().toMap)
      assert(rerun > maps)
      // Spark took the executor whose files were gone for lost: its chunks with it.
      assertRows(result, sumsWithWide)
    }

    test(s"$protocol, mode=push: chunks holding two attempts of each map output") {
      val spark = start(oldProtocol, push = true)
      val rdd = groupByKey(spark)
      mapStageTwice(dependencyOf(rdd), readFirstPartition(rdd))
      assertRows(rdd.collect().toMap, sums)
      assert(PluginCounters.application(sc)("blocks_from_stores").asInstanceOf[Long] > 0)
    }

    test(s"$protocol: map tasks that fail after 90% of their rows, local reduction and push") {
      for (push <- Seq(false, true)) {
        val spark = start(oldProtocol, push)
        expectInLogs(SparkLogs.Expected(errors = Seq("injected failure")))
        val (perMap, modulo) = (rows / maps, keys)
        val failing = spark.sparkContext
          .range(0, rows, 1, maps)
          .map { x =>
            val task = TaskContext.get()
            if (task.attemptNumber() == 0 && task
                .partitionId() % 2 == 0 && x % perMap == perMap * 9 / 10)
              throw new IllegalStateException(s"injected failure at row $x")
            (x % modulo, x)
          }
        val shuffled =
          if (push) failing.groupByKey(4).mapValues(_.sum) else failing.reduceByKey(_ + _, 4)
        assertRows(shuffled.collect().toMap, sums)
        val failAt = sums(1L)
        val df = sqlAggregate(spark).select(col("k"), col("sum(v)"))
        val failingRows = df.where(udf { (v: Long) =>
          val task = TaskContext.get()
          if (task.attemptNumber() == 0 && v == failAt)
            throw new IllegalStateException("injected failure in the reduce stage")
          true
        }.apply(col("sum(v)")))
        assertRows(failingRows.collect().map { case Row(k: Long, s: Long) => k -> s }.toMap, sums)
        resetSparkContext()
        SparkSession.clearActiveSession()
        SparkSession.clearDefaultSession()
      }
    }
  }

  test(
    "a reduce task reading some map outputs of a combining shuffle (as AQE's skew splits do): " +
      "a segment that also holds others fails its fetch, Spark runs the executor's map tasks " +
      "again, whole, and every row is read once") {
    val spark = start(oldProtocol = false)
    val rdd = reduceByKey(spark)
    val dependency = dependencyOf(rdd).asInstanceOf[ShuffleDependency[Long, Long, Long]]
    sc.submitMapStage(dependency).get()
    assert(counter("maps_folded") > 0, combine)
    val half = maps / 2
    val ranges = new MapRangeRDD(dependency, Seq((0, half), (half, maps)))
    val (read, rerun) = mapTasksDuring(ranges.collect())
    assertRows(read.toSeq.groupMapReduce(_._1)(_._2)(_ + _), sums)
    assert(rerun >= maps, "the map tasks did not run again")
    assert(counter("failed_reads") > 0, combine)
  }
}

/** Map outputs `[start, end)` of every partition of `dependency`, a task per range. */
private class MapRangeRDD(dependency: ShuffleDependency[Long, Long, Long], ranges: Seq[(Int, Int)])
    extends RDD[(Long, Long)](dependency.rdd.context, Seq(dependency)) {

  override protected def getPartitions: Array[Partition] =
    ranges.indices.map(MapRange(_)).toArray

  override def compute(split: Partition, context: TaskContext): Iterator[(Long, Long)] = {
    val (start, end) = ranges(split.index)
    SparkEnv.get.shuffleManager
      .getReader[Long, Long](
        dependency.shuffleHandle,
        start,
        end,
        0,
        dependency.partitioner.numPartitions,
        context,
        context.taskMetrics().createTempShuffleReadMetrics())
      .read()
      .map(record => (record._1, record._2))
  }
}

private final case class MapRange(index: Int) extends Partition
