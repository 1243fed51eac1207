package org.apache.spark.shuffle.adaptive

import org.scalatest.{BeforeAndAfterAll, Tag}

import org.apache.spark.{HashPartitioner, ShuffleSuite, SparkContext, TestUtils}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, STORE_MAX_SIZE}

/**
 * Apache Spark's `ShuffleSuite` in mode=store, with stores small enough (64 KiB) that its
 * shuffles mix blocks held in the map task's own store, spilled to the other executor's and
 * left in their files.
 *
 * One test of the contract cannot hold as written: SPARK-36206 corrupts a map-output file after
 * the map stage and expects the read to fail, but a block in a store is the copy taken at
 * commit, so its reader never sees the corrupt file. That test runs with stores of 0 bytes,
 * where every block is read from its file as in mode=pull, and must detect the corruption.
 */
class AdaptiveStoreShuffleSuite extends ShuffleSuite with BeforeAndAfterAll {
  private val storeSize = 64L * 1024

  override def beforeAll(): Unit = {
    super.beforeAll()
    conf.set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    conf.set(MODE, "store")
    conf.set(STORE_MAX_SIZE, storeSize)
  }

  override protected def test(testName: String, testTags: Tag*)(
      testFun: => Any)(implicit pos: org.scalactic.source.Position): Unit =
    if (testName == "SPARK-36206: shuffle checksum detect disk corruption") {
      super.test(testName + " (blocks read from files: stores of 0 bytes)", testTags: _*) {
        conf.set(STORE_MAX_SIZE, 0L)
        try testFun finally conf.set(STORE_MAX_SIZE, storeSize)
      }
    } else {
      super.test(testName, testTags: _*)(testFun)
    }

  test("store mode: blocks go to the stores and to disk, and are read from where they are") {
    sc = new SparkContext("local-cluster[2,1,1024]", "test", conf)
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    val pairs = sc.parallelize(1 to 8, 8).flatMap(m => (1 to 20000).map(i => (i % 1009, m * i)))
    val grouped = pairs.partitionBy(new HashPartitioner(6)).mapValues(_.toLong).reduceByKey(_ + _)
      .collectAsMap()
    assert(grouped === (1 to 8).flatMap(m => (1 to 20000).map(i => (i % 1009, (m * i).toLong)))
      .groupMapReduce(_._1)(_._2)(_ + _))
    val manager = sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]
    val report = manager.storeReport.get
    assert(report.acceptedLocally > 0 && report.leftOnDisk > 0, report)
    assert(report.stores.values.forall(s => s.placedHighWater <= storeSize), report)
    sc.listenerBus.waitUntilEmpty()
    val app = manager.fetchMetrics.snapshot()("application").asInstanceOf[Map[String, Any]]
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    val fromStores = app("bytes_from_stores").asInstanceOf[Long]
    assert(fromStores > 0 && fromStores < read, app)
  }
}
