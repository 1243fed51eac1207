package org.apache.spark.shuffle.adaptive.sql

import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import scala.concurrent.duration._
import scala.jdk.CollectionConverters._

import org.scalatest.concurrent.Eventually._

import org.apache.spark.{SparkContext, TestUtils}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.scheduler.{ExecutorCacheTaskLocation, SparkListener, SparkListenerTaskEnd, TaskLocality}
import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.execution.{CoalescedPartitionSpec, PartialMapperPartitionSpec, PartialReducerPartitionSpec, ShufflePartitionSpec, ShuffledRowRDD, SparkPlan}
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec
import org.apache.spark.sql.execution.exchange.{ReusedExchangeExec, ShuffleExchangeExec}
import org.apache.spark.sql.functions._
import org.apache.spark.shuffle.adaptive.compat.SqlExchanges
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, PUSH_MAX_BLOCK_SIZE}
import org.apache.spark.shuffle.adaptive.{AdaptiveShuffleHandle, AdaptiveShuffleManager, PluginCounters, PushProbe, ReadsSparkLogs}

/**
 * mode=push in Spark SQL on two executors: every exchange is the plugin's, keeps Spark's
 * canonical form (so it is reused), and its reduce tasks prefer, and run at, the owners that
 * merged their partitions.
 */
class OwnerPlacedExchangeSuite extends AnyFunSuite with BeforeAndAfterAll with ReadsSparkLogs {

  private var spark: SparkSession = _

  override protected def underTest: Option[SparkContext] = Option(spark).map(_.sparkContext)

  override def beforeAll(): Unit = {
    super.beforeAll()
    spark = SparkSession
      .builder()
      .master("local-cluster[2,1,1024]")
      .appName("OwnerPlacedExchangeSuite")
      .config(SHUFFLE_MANAGER.key, classOf[AdaptiveShuffleManager].getName)
      .config(MODE.key, "push")
      .config("spark.sql.extensions", classOf[AdaptiveShuffleExtensions].getName)
      .config("spark.sql.shuffle.partitions", "8")
      .config("spark.sql.autoBroadcastJoinThreshold", "-1")
      .config("spark.ui.enabled", "false")
      // A reduce task waits for its owner however long the tasks before it there take (on a
      // busy machine, longer than Spark's 3s), so that where it ran says where it was placed.
      .config("spark.locality.wait.process", "10min")
      .getOrCreate()
    TestUtils.waitUntilExecutorsUp(spark.sparkContext, 2, 60000)
  }

  override def afterAll(): Unit =
    try
      if (spark != null) {
        spark.stop()
        // What its executors logged while they stopped.
        checkLogs()
      }
    finally super.afterAll()

  private def withAqe[T](on: Boolean)(body: => T): T = {
    spark.conf.set("spark.sql.adaptive.enabled", on.toString)
    try body
    finally spark.conf.unset("spark.sql.adaptive.enabled")
  }

  private def keyed(rows: Int, maps: Int): DataFrame =
    spark.range(0, rows, 1, maps).select((col("id") % 97).as("k"), col("id").as("v"))

  private def finalPlan(df: DataFrame): SparkPlan = df.queryExecution.executedPlan match {
    case aqe: AdaptiveSparkPlanExec => aqe.finalPhysicalPlan
    case plan => plan
  }

  /**
   * Runs the map stages of `df`'s exchanges (a plan without AQE, whose exchanges its query
   * runs as they are) and waits until the executors pushed all they queued: the reduce tasks
   * of `df` that follow find every pushed block merged, none arriving after they sealed their
   * partitions. Under AQE a query stage copies its exchange, so its map stages run anew.
   */
  private def pushedBeforeReduce(df: DataFrame): Unit = {
    val sc = spark.sparkContext
    df.queryExecution.executedPlan.collect { case e: AdaptiveShuffleExchangeExec => e }.foreach {
      e => sc.submitMapStage(e.shuffleDependency).get()
    }
    // An executor that never committed a map output has no gauge, and nothing queued.
    eventually(timeout(60.seconds), interval(50.millis)) {
      val queued = PushProbe.queued(sc, Seq("0", "1"))
      assert(queued.values.forall(_.forall(_ == 0L)), queued)
    }
  }

  /** What `query` answered, and the locality of each result task it ran. */
  private def resultTasks[T](query: => T): (T, Seq[TaskLocality.Value]) = {
    val sc = spark.sparkContext
    sc.listenerBus.waitUntilEmpty()
    val localities = new java.util.concurrent.ConcurrentLinkedQueue[TaskLocality.Value]
    val listener = new SparkListener {
      override def onTaskEnd(end: SparkListenerTaskEnd): Unit =
        if (end.taskType == "ResultTask") localities.add(end.taskInfo.taskLocality)
    }
    sc.addSparkListener(listener)
    try {
      val answer = query
      sc.listenerBus.waitUntilEmpty()
      (answer, localities.asScala.toSeq)
    } finally sc.removeSparkListener(listener)
  }

  /** An application counter; 0 before the first shuffle (which starts the plugin's driver). */
  private def counter(name: String): Long = {
    val sc = spark.sparkContext
    if (sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager].driver.isEmpty) 0L
    else PluginCounters.application(sc)(name).asInstanceOf[Long]
  }

  test("every exchange is the plugin's, with Spark's canonical form, and is reused as Spark's") {
    withAqe(on = false) {
      // The sums are combined (CombiningExchange) and reused; the small table is shuffled for
      // the join (AdaptiveExchange).
      val sums = keyed(20000, 4).groupBy("k").agg(sum("v").as("s"))
      val small = keyed(500, 2).withColumnRenamed("v", "w")
      val joined = sums.join(sums.withColumnRenamed("s", "t"), "k").join(small, "k")
      val plan = joined.queryExecution.executedPlan
      assert(plan.collect { case e: ShuffleExchangeExec => e }.isEmpty, plan)
      val ours = plan.collect { case e: AdaptiveShuffleExchangeExec => e }
      assert(ours.nonEmpty, plan)
      ours.foreach { e =>
        val spark = SqlExchanges.exchange(
          e.outputPartitioning,
          e.child,
          e.shuffleOrigin,
          e.advisoryPartitionSize)
        assert(e.canonicalized === spark.canonicalized)
      }
      assert(plan.collect { case r: ReusedExchangeExec => r }.nonEmpty, plan)
      assert(
        plan.toString.contains("CombiningExchange") && plan.toString.contains("AdaptiveExchange"))
      val sumOf = (0L until 20000L).groupBy(_ % 97).map { case (k, vs) => k -> vs.sum }
      val expected = (0L until 500L).map(w => (w % 97, sumOf(w % 97), sumOf(w % 97), w)).sorted
      val rows = joined.collect().map(r => (r.getLong(0), r.getLong(1), r.getLong(2), r.getLong(3)))
      assert(rows.toSeq.sorted === expected)
    }
  }

  test("push.maxBlockSize unset: the exchange pushes blocks up to 1m, an RDD shuffle up to 4k") {
    withAqe(on = false) {
      // 8 x 8 blocks of tens of KiB of hex digits (which LZ4 barely compresses): above the RDD
      // default, below the SQL one.
      def pushedBlocks(shuffle: => Long): Long = {
        val before = counter("blocks_from_stores")
        assert(shuffle === 40000)
        counter("blocks_from_stores") - before
      }
      assert(spark.sparkContext.getConf.getOption(PUSH_MAX_BLOCK_SIZE.key).isEmpty)
      val counts = keyed(40000, 8)
        .select(col("k"), sha2(col("v").cast("string"), 256).as("h"))
        .repartition(8, col("k"))
        .groupBy("k")
        .agg(count("h").as("n"))
      pushedBeforeReduce(counts)
      val sql = pushedBlocks(counts.collect().map(_.getLong(1)).sum)
      val rdd = pushedBlocks(
        spark.sparkContext
          .parallelize(0L until 40000L, 8)
          .map(i => (i % 97, java.util.UUID.nameUUIDFromBytes(BigInt(i).toByteArray).toString))
          .partitionBy(new org.apache.spark.HashPartitioner(8))
          .count())
      assert(sql === 64, "every block of the SQL exchange read from its owner's store")
      assert(rdd === 0, "no block of the RDD shuffle pushed")
    }
  }

  test("reduce tasks run at the owners that merged their partitions, with AQE on and off") {
    Seq(false, true).foreach { aqe =>
      withAqe(aqe) {
        val tasks = counter("stored_reduce_tasks")
        val df = keyed(40000, 8).repartition(8, col("k")).groupBy("k").agg(count("*").as("n"))
        if (!aqe) pushedBeforeReduce(df)
        val (total, localities) = resultTasks(df.collect().map(_.getLong(1)).sum)
        assert(total === 40000)
        if (!aqe) assert(counter("stored_reduce_tasks") - tasks === 8, "a task read no chunks")
        // Each ran at the executor its partitions' owner is, the one location it preferred.
        assert(
          localities.nonEmpty && localities.forall(_ == TaskLocality.PROCESS_LOCAL),
          s"aqe=$aqe: $localities")
      }
    }
  }

  test("the two sides of a join get the same owners, and its reduce tasks run at them") {
    Seq(false, true).foreach { aqe =>
      withAqe(aqe) {
        spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
        try {
          // Half the left side's rows have one key, of the first of the 8 partitions: placed
          // alone by its sizes, the left side's owners would differ from the even right side's.
          val hot = spark
            .range(0, 97)
            .where(pmod(hash(col("id")), lit(8)) === 0)
            .first()
            .longValue
          val left = spark
            .range(0, 20000, 1, 8)
            .select(
              when(col("id") % 2 === 0, lit(hot)).otherwise(col("id") % 97).as("k"),
              // Rows that differ, so that the hot key's bytes stay as many once compressed.
              sha2(col("id").cast("string"), 256).as("w"))
          val right = keyed(9700, 4).select(col("k"), col("v"))
          val joined = left.join(right, "k")
          val tasks = counter("stored_reduce_tasks")
          // Right has 100 rows of each key.
          val leftCounts = (0L until 20000L)
            .map(id => if (id % 2 == 0) hot else id % 97)
            .groupBy(identity)
            .map { case (k, ids) => k -> ids.size.toLong }
          // The joined plan itself, whose exchanges are then asked for their owners.
          if (!aqe) pushedBeforeReduce(joined)
          val (rows, localities) =
            resultTasks(joined.queryExecution.executedPlan.execute().count())
          assert(rows === leftCounts.values.map(_ * 100).sum)
          val exchanges = finalPlan(joined).collect {
            case e: AdaptiveShuffleExchangeExec => e
            case s: org.apache.spark.sql.execution.adaptive.ShuffleQueryStageExec =>
              s.shuffle.asInstanceOf[AdaptiveShuffleExchangeExec]
          }
          assert(exchanges.size === 2, finalPlan(joined))
          val layouts = exchanges.map { e =>
            val owners = e.shuffleDependency.shuffleHandle
              .asInstanceOf[AdaptiveShuffleHandle[_, _, _]]
              .liveOwners
              .get
            (owners.owners, owners.firstPartition)
          }
          assert(layouts.distinct.size === 1, s"aqe=$aqe: $layouts")
          // Each task reads both sides out of chunks: one count per side.
          if (!aqe) assert(counter("stored_reduce_tasks") - tasks === 16)
          // Each ran at the executor that owns its partition on both sides.
          assert(
            localities.size === 8 && localities.forall(_ == TaskLocality.PROCESS_LOCAL),
            s"aqe=$aqe: $localities")
          // The same per shuffle, as metrics(spark) reports it, and for the bytes read of chunks.
          val sc = spark.sparkContext
          sc.listenerBus.waitUntilEmpty()
          val push = sc.env.shuffleManager
            .asInstanceOf[AdaptiveShuffleManager]
            .driver
            .get
            .metrics("push")
            .asInstanceOf[Map[String, Map[String, Any]]]
          if (!aqe) exchanges.foreach { e =>
            val reads = push(e.shuffleId.toString).view.mapValues {
              case n: Long => n
              case _ => -1L
            }
            // Where a table placed by size came after some map outputs were pushed, part of a
            // partition is merged at its first owner: how much depends on when the table
            // arrived, so only that the owner's own executor served bytes is certain.
            assert(
              reads("reduce_tasks_reading_chunks") === 8 &&
                reads("bytes_at_owner") > 0 &&
                reads("bytes_at_owner") <= reads("bytes_from_chunks"),
              s"aqe=$aqe, shuffle ${e.shuffleId}: ${reads.toMap}")
          }
        } finally spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
      }
    }
  }

  test("whole partitions prefer their owner; skew splits and local reads keep Spark's places") {
    withAqe(on = false) {
      val df = keyed(20000, 4).repartition(8, col("k"))
      val exchange = df.queryExecution.executedPlan.collectFirst {
        case e: AdaptiveShuffleExchangeExec => e
      }.get
      exchange.execute().count()
      val dependency = exchange.shuffleDependency
      val owners = dependency.shuffleHandle
        .asInstanceOf[AdaptiveShuffleHandle[_, _, _]]
        .liveOwners
        .get
      def ownerOf(p: Int) = {
        val owner = owners.ranges(p, p + 1).head._1
        ExecutorCacheTaskLocation(owner.host, owner.executorId).toString
      }
      val specs = Array[ShufflePartitionSpec](
        CoalescedPartitionSpec(0, 1),
        CoalescedPartitionSpec(7, 8),
        PartialReducerPartitionSpec(3, 0, 2, 100),
        PartialMapperPartitionSpec(1, 0, 8))
      val ours = exchange.getShuffleRDD(specs)
      val sparks = new ShuffledRowRDD(dependency, Map.empty, specs)
      def preferred(rdd: org.apache.spark.rdd.RDD[_], i: Int) =
        rdd.preferredLocations(rdd.partitions(i))
      assert(preferred(ours, 0) === Seq(ownerOf(0)))
      assert(preferred(ours, 1) === Seq(ownerOf(7)))
      assert(ownerOf(0) != ownerOf(7), "each executor owns half the partitions")
      assert(
        preferred(ours, 2) === preferred(sparks, 2) && preferred(ours, 3) === preferred(sparks, 3))
    }
  }
}
