package org.apache.spark.shuffle.adaptive

import java.util.concurrent.atomic.AtomicInteger

import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually

import org.apache.spark.{LocalSparkContext, MapOutputTrackerMaster, Partition, ShuffleDependency, SparkConf, SparkContext, SparkEnv, SparkFunSuite, TaskContext, TestUtils}
import org.apache.spark.internal.config.{SHUFFLE_IO_PLUGIN_CLASS, SHUFFLE_MANAGER}
import org.apache.spark.rdd.{RDD, ShuffledRDD}
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.{col, count, length, sha2, sum}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, Mode, PUSH_QUEUE_SIZE, PUSH_RELIABILITY, Reliability, ReliableDataIO, STORE_MAX_SIZE}
import org.apache.spark.shuffle.adaptive.dummy.{DestinationPartitioner, DummyRDD, DummySpec, ExecutorProbe, PinnedRDD}
import org.apache.spark.shuffle.adaptive.sql.{AdaptiveShuffleExchangeExec, AdaptiveShuffleExtensions}

/**
 * push.reliability on three executors: every map task runs on executor 0 (pinned), which is
 * then lost (killed by the driver, its files gone with it) after the map stage; what runs again
 * to read the shuffle is counted.
 */
class ReliablePushSuite
    extends SparkFunSuite
    with LocalSparkContext
    with SparkLogsCheck
    with Eventually {
  import SkewedShuffles.shuffledDigest

  private val MiB = 1024L * 1024
  private val spec = DummySpec(
    totalBytes = 12 * MiB,
    partitionBytes = MiB / 2,
    skew = 1.0,
    seed = 7,
    compressible = false)

  private def conf(reliability: String): SparkConf = new SparkConf()
    .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    .set(MODE, Mode.Push)
    .set(PUSH_RELIABILITY, reliability)
    .set(SHUFFLE_IO_PLUGIN_CLASS, ReliableDataIO)

  private def start(
      reliability: String,
      queueSize: Long = 64 * MiB,
      storeSize: Long = 64 * MiB): Unit = {
    val c = conf(reliability)
      .set("spark.sql.extensions", classOf[AdaptiveShuffleExtensions].getName)
      .set(STORE_MAX_SIZE, storeSize)
      .set(PUSH_QUEUE_SIZE, queueSize)
      // The pinned map tasks wait for executor 0 rather than run elsewhere.
      .set("spark.locality.wait", "120s")
    sc = new SparkContext("local-cluster[3,1,1024]", "test", c)
    TestUtils.waitUntilExecutorsUp(sc, 3, 60000)
    // Owners are the executors whose block managers the driver knows when the map stage starts.
    Seq("0", "1", "2").foreach(ExecutorProbe.location(sc, _))
  }

  private def manager: AdaptiveShuffleManager =
    sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]

  private def application(): Map[String, Any] = PluginCounters.application(sc)

  /**
   * Runs the map stage of `shuffled` (no wait for pushes), then loses the executor that
   * `victim` picks (by the map indices each executor holds outputs of, which are almost always
   * all on executor 0: a map task may start elsewhere before the scheduler has offered executor
   * 0's core); answers the indices of the map outputs lost with it.
   */
  private def mapStageThenLose(
      shuffled: RDD[_],
      victim: Map[String, Seq[Int]] => String): Seq[Int] =
    mapStageThenLose(shuffled.dependencies.head.asInstanceOf[ShuffleDependency[_, _, _]], victim)

  /** The same for the shuffle of `dependency`. */
  private def mapStageThenLose(
      dependency: ShuffleDependency[_, _, _],
      victim: Map[String, Seq[Int]] => String): Seq[Int] = {
    sc.submitMapStage(dependency).get()
    val statuses = sc.env.mapOutputTracker
      .asInstanceOf[MapOutputTrackerMaster]
      .shuffleStatuses(dependency.shuffleId)
      .mapStatuses
    val byExecutor = statuses.indices.groupBy(i => statuses(i).location.executorId)
    val lost = victim(byExecutor)
    lose(lost)
    byExecutor(lost)
  }

  /** Kills `executorId` (the master starts another) and waits until the driver has lost it. */
  private def lose(executorId: String): Unit = {
    killAndReplaceExecutor(executorId)
    eventually(timeout(60.seconds), interval(100.millis)) {
      assert(!sc.env.blockManager.master.getMemoryStatus.keys.exists(_.executorId == executorId))
    }
  }

  /** The executor that holds the most map outputs. */
  private val busiest = (byExecutor: Map[String, Seq[Int]]) => byExecutor.maxBy(_._2.size)._1

  /** Map tasks that ran while `body` did. */
  private def mapTasksDuring(body: => Unit): Int = {
    val ran = new AtomicInteger
    val listener = new SparkListener {
      override def onTaskEnd(end: SparkListenerTaskEnd): Unit =
        if (end.taskType == "ShuffleMapTask") ran.incrementAndGet()
    }
    sc.addSparkListener(listener)
    try {
      body
      sc.listenerBus.waitUntilEmpty()
    } finally sc.removeSparkListener(listener)
    ran.get
  }

  private def awaitLossChecked(executors: Long = 1): Map[String, Long] =
    eventually(timeout(60.seconds), interval(100.millis)) {
      val losses = manager.driver.get.losses
      assert(losses.get("executors_lost") === Some(executors), losses)
      losses
    }

  test("replicated needs mode=push and the plugin's ShuffleDataIO, and says so") {
    val noDataIO = intercept[IllegalArgumentException] {
      new AdaptiveShuffleManager(conf(Reliability.Replicated).remove(SHUFFLE_IO_PLUGIN_CLASS))
    }
    assert(
      Seq(PUSH_RELIABILITY.key, SHUFFLE_IO_PLUGIN_CLASS.key, ReliableDataIO, Reliability.None)
        .forall(noDataIO.getMessage.contains),
      noDataIO.getMessage)
    val pull = intercept[IllegalArgumentException] {
      new AdaptiveShuffleManager(conf(Reliability.Replicated).set(MODE, Mode.Pull))
    }
    assert(pull.getMessage.contains(s"${MODE.key}=${Mode.Push}"), pull.getMessage)
    def reliable(c: SparkConf) = new AdaptiveShuffleDataIO(c).driver().supportsReliableStorage()
    assert(reliable(conf(Reliability.Replicated)))
    assert(!reliable(conf(Reliability.None)))
    assert(!reliable(conf(Reliability.Replicated).set(MODE, Mode.Pull)))
  }

  test(
    "replicated: losing the executor that ran every map task reruns none of them; reduce " +
      "tasks read its blocks out of the other executors' chunks, in memory and on disk") {
    // The owners' stores overflow: their chunks go to their disks, not to the executor whose
    // store is empty (it merges nothing: its own partitions' blocks go to its replica), which
    // is lost with the only other copy of their blocks.
    start(Reliability.Replicated, storeSize = 2 * MiB)
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    val handle = shuffled.dependencies.head
      .asInstanceOf[ShuffleDependency[_, _, _]]
      .shuffleHandle
      .asInstanceOf[AdaptiveShuffleHandle[_, _, _]]
    // What the driver's services see of the owners is never what places them.
    assert(handle.placedVersions.isEmpty)
    val lost = mapStageThenLose(shuffled, busiest)
    assert(handle.placedVersions.exists(_.head.owners.size == 3))
    assert(
      awaitLossChecked() === Map(
        "executors_lost" -> 1L,
        "map_outputs_kept" -> lost.size.toLong,
        "map_outputs_rerun" -> 0L))
    val rerun = mapTasksDuring {
      assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    }
    assert(rerun === 0)
    val app = application()
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    assert(read > 0 && app("bytes_from_stores") === read, app)
    assert(app("chunk_fallbacks") === 0L && app("chunks_at_peers") === 0L, app)

    // A skew split's narrow map range, which reads files while their executor lives.
    val dummy = new DummyRDD(sc, spec)
    val partitioner = new DestinationPartitioner(spec.numPartitions)
    val firstTwo = SkewedShuffles.digest(
      dummy.partitions.iterator
        .take(2)
        .flatMap(p => dummy.compute(p, null))
        .map(r => partitioner.getPartition(r._1) -> r))
    val dependency =
      shuffled.dependencies.head.asInstanceOf[ShuffleDependency[Int, Array[Byte], Array[Byte]]]
    val rerunForSplit = mapTasksDuring {
      assert(shuffledDigest(new MapRangeReadRDD(dependency, 0, 2)) === firstTwo)
    }
    assert(rerunForSplit === 0)
  }

  /** Dynamic allocation from three executors down to one, with neither service nor tracking. */
  private def dynamic(reliability: String): SparkConf = conf(reliability)
    .set("spark.dynamicAllocation.enabled", "true")
    .set("spark.dynamicAllocation.shuffleTracking.enabled", "false")
    .set("spark.dynamicAllocation.minExecutors", "1")
    .set("spark.dynamicAllocation.initialExecutors", "3")
    .set("spark.dynamicAllocation.maxExecutors", "3")
    .set("spark.dynamicAllocation.executorIdleTimeout", "1s")

  /**
   * Runs the map stage of a shuffle wherever its tasks go (idle executors may be released at any
   * time), waits until dynamic allocation has released all executors but one (the master may
   * have started some again meanwhile) and the driver has checked the map outputs of each, and
   * answers the shuffle.
   */
  private def mapStageThenShrink(): ShuffledRDD[Int, Array[Byte], Array[Byte]] = {
    val shuffled = new ShuffledRDD[Int, Array[Byte], Array[Byte]](
      new DummyRDD(sc, spec),
      new DestinationPartitioner(spec.numPartitions))
    sc.submitMapStage(shuffled.dependencies.head.asInstanceOf[ShuffleDependency[_, _, _]]).get()
    eventually(timeout(60.seconds), interval(100.millis)) {
      assert(sc.env.blockManager.master.getMemoryStatus.keys.count(!_.isDriver) === 1)
      val released = sc.statusStore.executorList(false).count(e => !e.isActive && e.id != "driver")
      assert(released >= 2)
      assert(
        manager.driver.get.losses.get("executors_lost").contains(released.toLong),
        manager.driver.get.losses)
    }
    shuffled
  }

  test(
    "replicated: dynamic allocation without the external shuffle service or shuffle tracking; " +
      "executors it releases first hand their map outputs to the one that stays (Spark's " +
      "decommissioning); no map task runs again") {
    // Spark refuses the same settings when a lost executor's map outputs would be lost.
    expectInLogs(SparkLogs.Expected(errors = Seq("Dynamic allocation of executors requires")))
    val refused = intercept[org.apache.spark.SparkException] {
      sc = new SparkContext("local-cluster[3,1,1024]", "test", dynamic(Reliability.None))
    }
    assert(refused.getMessage.contains("Dynamic allocation"), refused.getMessage)
    sc = new SparkContext(
      "local-cluster[3,1,1024]",
      "test",
      dynamic(Reliability.Replicated)
        .set("spark.decommission.enabled", "true")
        .set("spark.storage.decommission.enabled", "true")
        .set("spark.storage.decommission.shuffleBlocks.enabled", "true")
        .set("spark.storage.decommission.rddBlocks.enabled", "false")
        // An executor leaves at the first check after its blocks moved (30 s apart by default).
        .set("spark.storage.decommission.replicationReattemptInterval", "1s"))
    val shuffled = mapStageThenShrink()
    assert(manager.driver.get.losses("map_outputs_rerun") === 0L, manager.driver.get.losses)
    val rerun = mapTasksDuring {
      assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    }
    assert(rerun === 0)
    val app = application()
    // Every map output now lives in the files of the executor that stays, which reads them.
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]]
    assert(read.keySet === Set("local") && read("local") > 0, app)
  }

  test(
    "replicated: losing the executor that ran every map task and then its replica reruns the " +
      "map tasks whose blocks neither live owner held, and only those; the shuffle reads right") {
    start(Reliability.Replicated)
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    var first = ""
    mapStageThenLose(shuffled, byExecutor => { first = busiest(byExecutor); first })
    awaitLossChecked()
    val table = shuffled.dependencies.head
      .asInstanceOf[ShuffleDependency[_, _, _]]
      .shuffleHandle
      .asInstanceOf[AdaptiveShuffleHandle[_, _, _]]
      .placedVersions
      .get
      .last
    // Its replica held the blocks of its own partitions: now they are in its files alone, lost.
    val replica = table.replicaOf(table.owners.find(_.executorId == first).get).get.executorId
    lose(replica)
    val rerunByDriver = awaitLossChecked(2)("map_outputs_rerun")
    val rerun = mapTasksDuring {
      assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    }
    assert(rerun > 0 && rerun === rerunByDriver, manager.driver.get.losses)
  }

  test(
    "replicated, in Spark SQL: losing the executor with the most map outputs of the plugin's " +
      "exchange reruns none; reduce tasks prefer live owners only and read the query right") {
    start(Reliability.Replicated)
    val spark = SparkSession.builder().getOrCreate()
    try {
      spark.conf.set("spark.sql.adaptive.enabled", "false")
      val df = spark
        .range(0, 60000, 1, 6)
        .select((col("id") % 1000).as("k"), col("id"), sha2(col("id").cast("string"), 256).as("v"))
        .repartition(12, col("k"))
        .groupBy("k")
        .agg(count("*"), sum("id"), sum(length(col("v"))))
      val plan = df.queryExecution.executedPlan
      val exchange = plan.collectFirst { case e: AdaptiveShuffleExchangeExec => e }.get
      var lost = ""
      val lostOutputs =
        mapStageThenLose(exchange.shuffleDependency, b => { lost = busiest(b); lost })
      assert(
        awaitLossChecked() === Map(
          "executors_lost" -> 1L,
          "map_outputs_kept" -> lostOutputs.size.toLong,
          "map_outputs_rerun" -> 0L))
      val reduce = exchange.execute()
      val preferred = reduce.partitions.map(reduce.preferredLocations)
      // The lost owner's partitions, merged nowhere else whole, prefer no executor; the others
      // their live owner.
      assert(preferred.forall(_.size <= 1) && preferred.count(_.size == 1) >= 12 / 3 * 2)
      assert(preferred.flatten.forall(!_.endsWith(s"_$lost")), preferred.toSeq)
      var rows = Seq.empty[(Long, Long, Long, Long)]
      val rerun = mapTasksDuring {
        rows = plan
          .executeCollect()
          .map(r => (r.getLong(0), r.getLong(1), r.getLong(2), r.getLong(3)))
          .toSeq
          .sorted
      }
      // Key k: the 60 ids k, k + 1000, ..., each with a 64-character hash.
      val expected =
        (0L until 1000L).map(k => (k, 60L, (0L until 60L).map(k + 1000L * _).sum, 3840L))
      assert(rows === expected)
      assert(rerun === 0)
    } finally {
      SparkSession.clearActiveSession()
      SparkSession.clearDefaultSession()
    }
  }

  test("reliability=none: the same loss reruns every map task of the lost executor") {
    start(Reliability.None)
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    val lost = mapStageThenLose(shuffled, busiest)
    val rerun = mapTasksDuring {
      assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    }
    assert(rerun === lost.size)
    assert(manager.driver.get.losses.isEmpty)
  }

  test(
    "replicated: a map output the push queue could not take whole is the only one the driver " +
      "unregisters, and the only map task rerun") {
    // Map 0 writes 20 blocks of 64 KiB, more than the queue takes; maps 1 to 5 write 64 bytes.
    start(Reliability.Replicated, queueSize = 512 * 1024)
    val partitions = 20
    val maps = sc
      .parallelize(0 until 6, 6)
      .flatMap { m =>
        val random = new java.util.Random(m)
        (0 until partitions).map { p =>
          val payload = new Array[Byte](if (m == 0) 64 * 1024 else 64)
          random.nextBytes(payload)
          p -> payload
        }
      }
    val shuffled = new ShuffledRDD[Int, Array[Byte], Array[Byte]](
      new PinnedRDD(maps, ExecutorProbe.location(sc, "0")),
      new DestinationPartitioner(partitions))
    // The executor that holds map 0's output is lost.
    val lost = mapStageThenLose(shuffled, _.find(_._2.contains(0)).get._1)
    assert(
      awaitLossChecked() === Map(
        "executors_lost" -> 1L,
        "map_outputs_kept" -> (lost.size - 1L),
        "map_outputs_rerun" -> 1L))
    val expected = maps.collect().map { case (p, b) => p -> b.mkString(",") }.sorted.toSeq
    var read = Seq.empty[(Int, String)]
    val rerun = mapTasksDuring {
      read = shuffled.collect().map { case (p, b) => p -> b.mkString(",") }.sorted.toSeq
    }
    assert(read === expected)
    assert(rerun === 1)
  }
}

/** Each reduce partition of a shuffle, read from map outputs `[startMap, endMap)` only. */
private class MapRangeReadRDD[K, C](
    dependency: ShuffleDependency[K, _, C],
    startMap: Int,
    endMap: Int)
    extends RDD[(K, C)](dependency.rdd.context, Seq(dependency)) {

  override protected def getPartitions: Array[Partition] =
    Array.tabulate[Partition](dependency.partitioner.numPartitions)(i =>
      new Partition { override def index: Int = i })

  override def compute(split: Partition, context: TaskContext): Iterator[(K, C)] =
    SparkEnv.get.shuffleManager
      .getReader[K, C](
        dependency.shuffleHandle,
        startMap,
        endMap,
        split.index,
        split.index + 1,
        context,
        context.taskMetrics().createTempShuffleReadMetrics())
      .read()
      .asInstanceOf[Iterator[(K, C)]]
}
