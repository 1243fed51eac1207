package org.apache.spark.shuffle.adaptive

import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually

import org.apache.spark.{LocalSparkContext, MapOutputTrackerMaster, ShuffleDependency, SparkConf, SparkContext, SparkFunSuite, TestUtils}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, PUSH_AFTER_MAP_STAGE, STORE_MAX_SIZE}
import org.apache.spark.shuffle.adaptive.dummy.DummySpec

/**
 * mode=push on three executors: a skewed DummyRDD (Zipf alpha = 1, 80 partitions) whose map
 * tasks all run on executor 0, so every byte the other executors hold was pushed there. Pushes
 * go on after the map stage, so that every block reaches a store.
 */
class PushClusterSuite extends SparkFunSuite with LocalSparkContext with Eventually {
  import SkewedShuffles.shuffledDigest

  private val MiB = 1024L * 1024
  private val spec = DummySpec(
    totalBytes = 40 * MiB,
    partitionBytes = MiB / 2,
    skew = 1.0,
    seed = 5,
    compressible = false)
  private val executors = Seq("0", "1", "2")

  private def start(): Unit = {
    val conf = new SparkConf()
      .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
      .set(MODE, "push")
      .set(STORE_MAX_SIZE, 32 * MiB)
      .set(PUSH_AFTER_MAP_STAGE, true)
      // The pinned map tasks wait for executor 0 rather than run elsewhere.
      .set("spark.locality.wait", "120s")
    sc = new SparkContext("local-cluster[3,1,1024]", "test", conf)
    TestUtils.waitUntilExecutorsUp(sc, 3, 60000)
  }

  private def manager: AdaptiveShuffleManager =
    sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]

  private def dependencyOf(rdd: org.apache.spark.rdd.RDD[_]) =
    rdd.dependencies.head.asInstanceOf[ShuffleDependency[Int, Array[Byte], Array[Byte]]]

  private def application(): Map[String, Any] = {
    sc.listenerBus.waitUntilEmpty()
    manager.fetchMetrics.snapshot()("application").asInstanceOf[Map[String, Any]]
  }

  test(
    "blocks are pushed to balanced owners while the map stage runs, and read there; once " +
      "an owner is lost, its blocks are read from their files") {
    start()
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    sc.submitMapStage(dependencyOf(shuffled)).get()
    PushProbe.awaitPushed(sc, executors)
    assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    val report = manager.storeReport.get
    assert(report.push.duringMapStage > 0, report)
    assert(report.leftOnDisk === 0 && report.notArrived === 0, report)
    // Largest partition first onto the least loaded: no owner holds more than the mean plus
    // the largest partition (what the stores were placed, as nothing left them).
    val sizes = sc.env.mapOutputTracker
      .asInstanceOf[MapOutputTrackerMaster]
      .getStatistics(dependencyOf(shuffled))
      .bytesByPartitionId
    val placed = report.stores.map { case (id, s) => id -> s.placedHighWater }
    assert(placed.keySet === executors.toSet && placed.values.forall(_ > 0), placed)
    assert(placed.values.max <= sizes.sum / 3 + sizes.max, (placed, sizes.toSeq))
    val app = application()
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    assert(app("bytes_from_stores") === read, app)
    val stored = app("stored_reduce_tasks").asInstanceOf[Long]
    val onOwner = app("stored_reduce_tasks_on_owner").asInstanceOf[Long]
    assert(stored === spec.numPartitions && onOwner <= stored, app)
    // Every map task ran on executor 0: what a reduce task read from the store of an executor
    // other than its own and other than 0 was pushed there first.
    sc.listenerBus.waitUntilEmpty()
    val byExecutor = manager.fetchMetrics
      .snapshot()("executors")
      .asInstanceOf[Map[String, Map[String, Any]]]
    val crossedTwice = byExecutor.map { case (reducer, counters) =>
      counters("bytes_from_stores_by_source")
        .asInstanceOf[Map[String, Long]]
        .collect {
          case (holder, bytes) if holder != reducer && holder != "0" => bytes
        }
        .sum
    }.sum
    assert(crossedTwice > 0 && app("bytes_crossed_twice") === crossedTwice, byExecutor)

    sc.killAndReplaceExecutor("2")
    eventually(timeout(60.seconds), interval(200.millis)) {
      assert(!manager.storeReport.get.stores.contains("2"))
    }
    assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
    val again = application()
    val readAgain = again("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum - read
    val fromStoresAgain = again("bytes_from_stores").asInstanceOf[Long] - read
    assert(readAgain > 0 && fromStoresAgain < readAgain, again)
  }

  test("an owner lost while pushes are under way: the result is still right") {
    start()
    val shuffled = SkewedShuffles.onExecutor(sc, spec, "0")
    val mapStage = sc.submitMapStage(dependencyOf(shuffled))
    eventually(timeout(60.seconds), interval(10.millis)) {
      assert(manager.storeReport.get.stores.get("1").exists(_.placedHighWater > 0))
    }
    assert(!mapStage.isCompleted, "the map stage ended before the first push: nothing was tested")
    sc.killAndReplaceExecutor("1")
    mapStage.get()
    assert(shuffledDigest(shuffled) === SkewedShuffles.expected(sc, spec))
  }
}
