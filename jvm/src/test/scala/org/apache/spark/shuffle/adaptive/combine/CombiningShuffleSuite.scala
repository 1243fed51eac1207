package org.apache.spark.shuffle.adaptive.combine

import scala.collection.mutable
import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually.{eventually, interval, timeout}

import org.apache.spark.{LocalSparkContext, MapOutputTrackerMaster, ShuffleDependency, SparkConf, SparkContext, SparkFunSuite, TestUtils}
import org.apache.spark.internal.config.{AUTH_SECRET, IO_ENCRYPTION_ENABLED, NETWORK_AUTH_ENABLED, SHUFFLE_CHECKSUM_ENABLED, SHUFFLE_MANAGER}
import org.apache.spark.rdd.RDD
import org.apache.spark.shuffle.adaptive.{AdaptiveShuffleManager, PluginCounters, SparkLogsCheck}

/**
 * RDD shuffles with map-side combine on two executors (local-cluster), under Spark's sort
 * shuffle and then under the plugin, which combines their map outputs per executor: the same
 * results, with combined records read; a lost executor's map outputs run again.
 */
class CombiningShuffleSuite extends SparkFunSuite with LocalSparkContext with SparkLogsCheck {

  private def start(manager: String, conf: SparkConf = new SparkConf()): Unit = {
    sc = new SparkContext("local-cluster[2,1,1024]", "test", conf.set(SHUFFLE_MANAGER, manager))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
  }

  /** Every key in each of 8 map outputs. */
  private def pairs(): RDD[(Int, Long)] = sc.parallelize(1 to 40000, 8).map(x => (x % 97, x.toLong))

  private def jobs(): Seq[Seq[(Int, String)]] = Seq(
    pairs().reduceByKey(_ + _, 5).collect().toSeq.map { case (k, v) => k -> v.toString },
    pairs()
      .aggregateByKey(Set.empty[Long], 3)((s, v) => if (s.size < 5) s + v % 7 else s, _ ++ _)
      .collect()
      .toSeq
      .map { case (k, s) => k -> s.toSeq.sorted.mkString(",") },
    pairs()
      .combineByKey[(Long, Long)](
        (v: Long) => (v, 1L),
        (c: (Long, Long), v: Long) => (c._1 + v, c._2 + 1),
        (a: (Long, Long), b: (Long, Long)) => (a._1 + b._1, a._2 + b._2))
      .collect()
      .toSeq
      .map { case (k, (sum, n)) => k -> s"$sum/$n" },
    pairs().foldByKey(0L, 4)(math.max).collect().toSeq.map { case (k, v) => k -> v.toString },
    pairs().mapValues(_ => 1).countByKey().toSeq.map { case (k, n) => k -> n.toString },
    // Values merged in place, as Spark allows an aggregator to.
    pairs()
      .mapValues(v => mutable.ArrayBuffer(v % 3))
      .reduceByKey((a, b) => { a ++= b; a }, 3)
      .collect()
      .toSeq
      .map { case (k, b) => k -> s"${b.sum}/${b.size}" })
    .map(_.sorted)

  private def combined(): Map[String, Any] =
    PluginCounters.application(sc)("combine").asInstanceOf[Map[String, Any]]

  test("reduceByKey, aggregateByKey, combineByKey, foldByKey and countByKey as under sort") {
    start("sort")
    val expected = jobs()
    sc.stop()
    sc = null
    start(classOf[AdaptiveShuffleManager].getName)
    assert(jobs() === expected)
    val counters = combined()
    assert(counters("segments_read").asInstanceOf[Long] > 0, counters)
    assert(counters("rows_merged").asInstanceOf[Long] > 0, counters)
    // Of four map outputs per executor, the first judge whether folding pays, writing theirs.
    assert(counters("maps_folded").asInstanceOf[Long] > 0, counters)
    assert(counters("maps_not_folded").asInstanceOf[Long] >= 2 * 6, counters)

    // Keys that never repeat: nothing is folded, and nothing read but the files.
    def count(name: String) = combined()(name).asInstanceOf[Long]
    val (folded, notFolded, read) =
      (count("maps_folded"), count("maps_not_folded"), count("segments_read"))
    val distinct = sc.parallelize(1 to 40000, 8).map(x => (x, 1L)).reduceByKey(_ + _, 5).count()
    assert(distinct === 40000)
    assert((count("maps_folded"), count("segments_read")) === ((folded, read)))
    assert(count("maps_not_folded") === notFolded + 8)
  }

  test("with spark.authenticate, I/O encryption and shuffle checksums, combined reads agree") {
    start(
      classOf[AdaptiveShuffleManager].getName,
      new SparkConf()
        .set(NETWORK_AUTH_ENABLED, true)
        .set(AUTH_SECRET, "pyspark-shuffle-test-secret")
        .set(IO_ENCRYPTION_ENABLED, true)
        .set(SHUFFLE_CHECKSUM_ENABLED, true))
    val sums = pairs().reduceByKey(_ + _, 4).collect().toMap
    assert(sums === (1 to 40000).groupMapReduce(_ % 97)(_.toLong)(_ + _))
    val counters = combined()
    assert(counters("segments_read").asInstanceOf[Long] > 0, counters)
    assert(counters("failed_reads") === 0L, counters)
  }

  test("a lost executor's map outputs run again, and the result is the same") {
    start(classOf[AdaptiveShuffleManager].getName)
    val sums = pairs().reduceByKey(_ + _, 4)
    val expected = (1 to 40000).groupMapReduce(_ % 97)(_.toLong)(_ + _)
    val dependency = sums.dependencies.head.asInstanceOf[ShuffleDependency[_, _, _]]
    sc.submitMapStage(dependency).get()
    val tracker = sc.env.mapOutputTracker.asInstanceOf[MapOutputTrackerMaster]
    val victim = tracker.shuffleStatuses(dependency.shuffleId).mapStatuses.head.location.executorId
    killAndReplaceExecutor(victim)
    eventually(timeout(60.seconds), interval(100.millis)) {
      assert(!sc.env.blockManager.master.getMemoryStatus.keys.exists(_.executorId == victim))
    }
    assert(sums.collect().toMap === expected)
  }
}
