package org.apache.spark.shuffle.adaptive

import org.scalatest.{BeforeAndAfterAll, Tag}

import org.apache.spark.{HashPartitioner, ShuffleDependency, ShuffleSuite, SparkContext, SparkEnv, TestUtils}
import org.apache.spark.internal.config.{SHUFFLE_IO_PLUGIN_CLASS, SHUFFLE_MANAGER}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, PUSH_CHUNK_SIZE, PUSH_MAX_BLOCK_SIZE, PUSH_RELIABILITY, Reliability, ReliableDataIO, STORE_MAX_SIZE}
import org.apache.spark.shuffle.adaptive.dummy.ExecutorProbe

/**
 * Apache Spark's `ShuffleSuite` in mode=push: map outputs pushed in the background to their
 * partitions' owners and merged there (handed to the other executor by a full store, or moved
 * to disk), or left in their files (a full store or push queue, a sealed partition). Stores are
 * small enough (64 KiB) that its shuffles mix blocks read out of chunks and from their files.
 *
 * One test of the contract cannot hold as written: SPARK-36206 corrupts a map-output file after
 * the map stage and expects the read to fail, but a merged block is the copy pushed at commit,
 * so its reader never sees the corrupt file. That test runs with stores of 0 bytes, where every
 * block is read from its file as in mode=pull, and must detect the corruption.
 */
abstract class PushShuffleContract
    extends ShuffleSuite
    with BeforeAndAfterAll
    with ShuffleSuiteLogsCheck {
  protected val storeSize: Long = 64L * 1024

  // Chunks and pushed runs well below the stores' size, so that stores take some of them, and
  // every block of the suite's small shuffles pushed.
  override def beforeAll(): Unit = {
    super.beforeAll()
    conf.set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    conf.set(MODE, "push")
    conf.set(STORE_MAX_SIZE, storeSize)
    conf.set(PUSH_CHUNK_SIZE, 16L * 1024)
    conf.set(PUSH_MAX_BLOCK_SIZE, 1024L * 1024)
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
}

/**
 * Spark's `ShuffleSuite` under push.reliability=replicated: every block pushed, an executor's own
 * partitions to the next owner, map tasks returning once their pushes arrived, and Spark told
 * that the shuffle's storage is reliable.
 */
class AdaptiveReplicatedPushShuffleSuite extends PushShuffleContract {
  override def beforeAll(): Unit = {
    super.beforeAll()
    conf.set(PUSH_RELIABILITY, Reliability.Replicated)
    conf.set(SHUFFLE_IO_PLUGIN_CLASS, ReliableDataIO)
  }
}

/** [[PushShuffleContract]] with push.reliability=none, and what mode=push does of its own. */
class AdaptivePushShuffleSuite extends PushShuffleContract {

  /**
   * Groups 8 map tasks' pairs into 6 partitions on two executors (after `beforeReduce` ran with
   * the map stage done), checks the sums, and answers the application's fetch counters.
   */
  private def groupedOnTwoExecutors(beforeReduce: () => Unit = () => ()): Map[String, Any] = {
    sc = new SparkContext("local-cluster[2,1,1024]", "test", conf)
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    // Owners are the executors whose block managers the driver knows when the map stage starts.
    Seq("0", "1").foreach(ExecutorProbe.location(sc, _))
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
    PluginCounters.application(sc)
  }

  /** Some bytes, not all, were read from stores. */
  private def assertReadFromStoresAndFiles(app: Map[String, Any]): Unit = {
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    val fromStores = app("bytes_from_stores").asInstanceOf[Long]
    assert(fromStores > 0 && fromStores < read, app)
  }

  private def mergedHighWater(): Map[String, Long] =
    ExecutorProbe.onEach(sc, Seq("0", "1"))(() =>
      SparkEnv.get.shuffleManager
        .asInstanceOf[AdaptiveShuffleManager]
        .executor
        .push
        .get
        .merges
        .memory
        .highWater)

  test("push mode: map outputs are merged at the owners and reduce tasks read their chunks") {
    val app = groupedOnTwoExecutors(() => PushProbe.awaitPushed(sc, Seq("0", "1")))
    assertReadFromStoresAndFiles(app)
    val chunks = app("chunks_read").asInstanceOf[Long]
    assert(chunks > 0 && app("chunk_fallbacks") === 0L, app)
    assert(app("stored_reduce_tasks").asInstanceOf[Long] > 0, app)
    val held = mergedHighWater()
    assert(held.values.forall(h => h > 0 && h <= storeSize), held)
  }

  test("push mode: blocks larger than push.maxBlockSize stay in their files") {
    // The grouped shuffle's blocks are about 23 KiB each.
    conf.set(PUSH_MAX_BLOCK_SIZE, 1024L)
    val app =
      try groupedOnTwoExecutors(() => PushProbe.awaitPushed(sc, Seq("0", "1")))
      finally conf.set(PUSH_MAX_BLOCK_SIZE, 1024L * 1024)
    assert(app("bytes_from_stores") === 0L && app("chunks_read") === 0L, app)
    assert(mergedHighWater().values.forall(_ == 0L))
  }
}
