package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

import org.apache.spark.{LocalSparkContext, ShuffleDependency, SparkConf, SparkContext, SparkFunSuite}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager

/** The plugin's counters travel from reduce tasks to the driver and agree with Spark's metrics. */
class FetchMetricsSuite extends SparkFunSuite with LocalSparkContext {

  test("counters of every reduce task reach the driver's listener") {
    val conf = new SparkConf().set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    sc = new SparkContext("local[2]", "test", conf)
    val sparkRead = mutable.ArrayBuffer.empty[(Long, Long)]
    sc.addSparkListener(new SparkListener {
      override def onTaskEnd(end: SparkListenerTaskEnd): Unit = sparkRead.synchronized {
        val read = end.taskMetrics.shuffleReadMetrics
        if (read.totalBlocksFetched > 0)
          sparkRead += ((read.totalBytesRead, read.totalBlocksFetched))
      }
    })
    val sums = sc
      .parallelize(1 to 20000, 4)
      .map(x => (x % 50, x.toLong))
      .reduceByKey(_ + _, 3)
      .collect()
      .toMap
    assert(sums.size === 50)

    sc.listenerBus.waitUntilEmpty()
    val manager = sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]
    val snapshot = manager.driver.get.fetchMetrics.snapshot()
    val app = snapshot("application").asInstanceOf[Map[String, Any]]
    assert(app("reduce_tasks") === 3L)
    // local mode: everything is read from the driver's own files.
    val bytes = app("bytes_by_transport").asInstanceOf[Map[String, Long]]
    val blocks = app("blocks_by_transport").asInstanceOf[Map[String, Long]]
    assert(bytes.keySet === Set(FetchCounters.Local))
    assert(bytes(FetchCounters.Local) === sparkRead.map(_._1).sum)
    assert(blocks(FetchCounters.Local) === sparkRead.map(_._2).sum)
    assert(app("requests") === 0L)
    assert(app("tasks_by_remote_sources") === Map("0" -> 3L))
    val executors = snapshot("executors").asInstanceOf[Map[String, Map[String, Any]]]
    assert(executors.keySet === Set("driver"))
    assert(executors("driver")("bytes_by_source") === Map("driver" -> bytes(FetchCounters.Local)))
  }

  test(
    "a shuffle's read report outlives the shuffle (Spark's cleaner removes it once its RDD is " +
      "gone); only the newest are kept") {
    val conf = new SparkConf().set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    sc = new SparkContext("local[2]", "test", conf)
    val manager = sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]
    def shuffleOnce(): Int = {
      val shuffled = sc.parallelize(1 to 100, 2).map(x => (x % 7, x)).reduceByKey(_ + _, 3)
      assert(shuffled.count() === 7)
      val shuffleId = shuffled.dependencies.head.asInstanceOf[ShuffleDependency[_, _, _]].shuffleId
      sc.cleaner.get.doCleanupShuffle(shuffleId, blocking = true)
      shuffleId
    }
    val first = shuffleOnce()
    sc.listenerBus.waitUntilEmpty()
    assert(manager.driver.get.readReports.reports.map(_.shuffleId) === Seq(first))
    val later = Seq.fill(ShuffleReadReporter.Kept)(shuffleOnce())
    sc.listenerBus.waitUntilEmpty()
    assert(manager.driver.get.readReports.reports.map(_.shuffleId) === later)
  }

  test(
    "each shuffle's map and reduce stages' executor CPU, as Spark's task metrics add up, reach " +
      "metrics and the read report; a stage between two shuffles counts for both") {
    val conf = new SparkConf().set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    sc = new SparkContext("local[2]", "test", conf)
    val cpuByStage = mutable.HashMap.empty[Int, (Long, Int)]
    sc.addSparkListener(new SparkListener {
      override def onTaskEnd(end: SparkListenerTaskEnd): Unit = cpuByStage.synchronized {
        val (ns, tasks) = cpuByStage.getOrElse(end.stageId, (0L, 0))
        cpuByStage(end.stageId) = (ns + end.taskMetrics.executorCpuTime, tasks + 1)
      }
    })
    val first = sc.parallelize(1 to 200000, 4).map(x => (x % 5000, x.toLong)).reduceByKey(_ + _, 3)
    val second = first.map { case (k, v) => (k % 10, v) }.reduceByKey(_ + _, 2)
    assert(second.count() === 10)
    sc.listenerBus.waitUntilEmpty()

    def idOf(rdd: org.apache.spark.rdd.RDD[_]): Int =
      rdd.dependencies.head.asInstanceOf[ShuffleDependency[_, _, _]].shuffleId
    val driver = sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager].driver.get
    val cpu = driver.metrics("cpu").asInstanceOf[Map[String, Map[String, Map[String, Any]]]]
    val (a, b) = (cpu(idOf(first).toString), cpu(idOf(second).toString))
    // Stages 0, 1 and 2 of the one job: map of the first, the one between, reduce of the second.
    def expected(stage: Int): Map[String, Any] = {
      val (ns, tasks) = cpuByStage(stage)
      Map("executor_cpu_s" -> ns / 1e9, "tasks" -> tasks)
    }
    def measured(side: Map[String, Any]) =
      side.view.filterKeys(Set("executor_cpu_s", "tasks")).toMap
    assert(measured(a("map")) === expected(0))
    assert(measured(a("reduce")) === expected(1))
    assert(measured(b("map")) === expected(1))
    assert(measured(b("reduce")) === expected(2))
    assert(a("map")("tasks") === 4 && b("reduce")("tasks") === 2)
    assert(a("map")("executor_cpu_s").asInstanceOf[Double] > 0)
    val report = driver.readReports.reports.find(_.shuffleId == idOf(second)).get
    assert(report.cpu === b)
  }

  test("merge adds counts and keeps the largest peak") {
    val a = new FetchCounters
    a.add(FetchCounters.ReduceTasks, 1)
    a.served("e1", "netty", 100)
    a.add(FetchCounters.Requests, 1)
    a.observe(FetchCounters.PeakBytesInFlight, 100)
    val b = new FetchCounters
    b.add(FetchCounters.ReduceTasks, 1)
    b.served("e1", "netty", 50)
    b.served("e2", FetchCounters.Local, 7)
    b.add(FetchCounters.Requests, 1)
    b.observe(FetchCounters.PeakBytesInFlight, 80)
    a.taskRead(self = "e2")
    b.taskRead(self = "e2")
    val merged = a.copy()
    merged.merge(b)
    assert(merged(FetchCounters.ReduceTasks) === 2)
    assert(merged(FetchCounters.BytesBySource).toMap === Map("e1" -> 150L, "e2" -> 7L))
    assert(
      merged(FetchCounters.BlocksByTransport).toMap === Map(
        "netty" -> 2L,
        FetchCounters.Local -> 1L))
    assert(merged(FetchCounters.PeakBytesInFlight) === 100)
    assert(merged.toMap("blocks_per_request") === 1.0)
    assert(merged.toMap("tasks_by_remote_sources") === Map("1" -> 2L))
    assert(a(FetchCounters.BytesBySource).toMap === Map("e1" -> 100L), "copy must not share state")
    assert(new FetchCounters().isZero && !merged.isZero)
  }
}
