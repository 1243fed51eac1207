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
