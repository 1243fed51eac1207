package org.apache.spark.shuffle.adaptive

import org.scalatest.{BeforeAndAfterAll, Tag}

import org.apache.spark.{HashPartitioner, ShuffleDependency, ShuffleSuite, SparkContext, TestUtils}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, PUSH_AFTER_MAP_STAGE, STORE_MAX_SIZE}
import org.apache.spark.shuffle.adaptive.store.StoreReport

/**
 * Apache Spark's `ShuffleSuite` in a mode with shuffle stores, small enough (64 KiB) that its
 * shuffles mix blocks held in stores and left in their files. In mode=push, pushes go on after
 * the map stage, so that blocks also arrive while reduce tasks read.
 *
 * One test of the contract cannot hold as written: SPARK-36206 corrupts a map-output file after
 * the map stage and expects the read to fail, but a block in a store is the copy taken at
 * commit, so its reader never sees the corrupt file. That test runs with stores of 0 bytes,
 * where every block is read from its file as in mode=pull, and must detect the corruption.
 */
abstract class StoredShuffleSuite(mode: String) extends ShuffleSuite with BeforeAndAfterAll {
  protected val storeSize: Long = 64L * 1024

  override def beforeAll(): Unit = {
    super.beforeAll()
    conf.set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    conf.set(MODE, mode)
    conf.set(STORE_MAX_SIZE, storeSize)
    conf.set(PUSH_AFTER_MAP_STAGE, true)
  }

  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(implicit
      pos: org.scalactic.source.Position): Unit =
    if (testName == "SPARK-36206: shuffle checksum detect disk corruption") {
      super.test(testName + " (blocks read from files: stores of 0 bytes)", testTags: _*) {
        conf.set(STORE_MAX_SIZE, 0L)
        try testFun
        finally conf.set(STORE_MAX_SIZE, storeSize)
      }
    } else {
      super.test(testName, testTags: _*)(testFun)
    }

  /**
   * Groups 8 map tasks' pairs into 6 partitions on two executors (after `beforeReduce` ran with
   * the map stage done), checks the sums, and answers the store report and the application's
   * fetch counters.
   */
  protected def groupedOnTwoExecutors(
      beforeReduce: () => Unit = () => ()): (StoreReport, Map[String, Any]) = {
    sc = new SparkContext("local-cluster[2,1,1024]", "test", conf)
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    val pairs = sc.parallelize(1 to 8, 8).flatMap(m => (1 to 20000).map(i => (i % 1009, m * i)))
    val partitioned = pairs.partitionBy(new HashPartitioner(6))
    sc.submitMapStage(partitioned.dependencies.head.asInstanceOf[ShuffleDependency[Int, Int, Int]])
      .get()
    beforeReduce()
    val grouped = partitioned.mapValues(_.toLong).reduceByKey(_ + _).collectAsMap()
    assert(
      grouped === (1 to 8)
        .flatMap(m => (1 to 20000).map(i => (i % 1009, (m * i).toLong)))
        .groupMapReduce(_._1)(_._2)(_ + _))
    val manager = sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]
    sc.listenerBus.waitUntilEmpty()
    (
      manager.storeReport.get,
      manager.fetchMetrics.snapshot()("application").asInstanceOf[Map[String, Any]])
  }

  /** Some bytes, not all, were read from stores; no store was placed more than its size. */
  protected def assertReadFromStoresAndFiles(report: StoreReport, app: Map[String, Any]): Unit = {
    assert(report.stores.values.forall(s => s.placedHighWater <= storeSize), report)
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    val fromStores = app("bytes_from_stores").asInstanceOf[Long]
    assert(fromStores > 0 && fromStores < read, app)
  }
}

/** mode=store: blocks held in the map task's own store, spilled to the other's, or in files. */
class AdaptiveStoreShuffleSuite extends StoredShuffleSuite("store") {

  test("store mode: blocks go to the stores and to disk, and are read from where they are") {
    val (report, app) = groupedOnTwoExecutors()
    assert(report.acceptedLocally > 0 && report.leftOnDisk > 0, report)
    assertReadFromStoresAndFiles(report, app)
  }
}

/**
 * mode=push: map outputs pushed in the background to their partitions' owners, spilled, or left
 * in their files (a full store or push queue).
 */
class AdaptivePushShuffleSuite extends StoredShuffleSuite("push") {

  test("push mode: map outputs reach the owners' stores and reduce tasks read them there") {
    val (report, app) = groupedOnTwoExecutors(() => PushProbe.awaitPushed(sc, Seq("0", "1")))
    assert(report.push.placedAtOwners > 0 && report.leftOnDisk > 0, report)
    assert(report.push.duringMapStage + report.push.afterMapStage > 0, report)
    assertReadFromStoresAndFiles(report, app)
    assert(app("stored_reduce_tasks").asInstanceOf[Long] > 0, app)
  }
}
