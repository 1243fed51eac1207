package org.apache.spark.shuffle.adaptive

import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually

import org.apache.spark.{ExecutorAllocationClient, HashPartitioner, LocalSparkContext, ShuffleDependency, SparkConf, SparkContext, SparkEnv, SparkFunSuite, TestUtils}
import org.apache.spark.internal.config.{AUTH_SECRET, DYN_ALLOCATION_EXECUTOR_IDLE_TIMEOUT, DYN_ALLOCATION_SHUFFLE_TRACKING_ENABLED, IO_ENCRYPTION_ENABLED, NETWORK_AUTH_ENABLED, SHUFFLE_MANAGER}
import org.apache.spark.rdd.ShuffledRDD
import org.apache.spark.scheduler.dynalloc.ExecutorMonitor
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, STORE_MAX_SIZE, TRANSPORT, UCX_LIBRARY_PATH}
import org.apache.spark.shuffle.adaptive.dummy.{DummySpec, PinnedRDD}
import org.apache.spark.shuffle.adaptive.dummy.ExecutorProbe
import org.apache.spark.util.ManualClock

/**
 * mode=store on three executors with extreme skew (DummyRDD, Zipf alpha = 3): every map task
 * runs on executor 0, whose store holds less than its map outputs, so the rest must go to the
 * other executors' memory.
 */
class StoreClusterSuite extends SparkFunSuite with LocalSparkContext with Eventually {
  import SkewedShuffles.shuffledDigest

  private val MiB = 1024L * 1024
  private val storeSize = 5 * MiB
  private val spec = DummySpec(
    totalBytes = 10 * MiB,
    partitionBytes = MiB,
    skew = 3.0,
    seed = 11,
    compressible = false)

  private def conf: SparkConf = new SparkConf()
    .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    .set(MODE, "store")
    .set(STORE_MAX_SIZE, storeSize)
    // The pinned map tasks wait for executor 0 rather than run elsewhere.
    .set("spark.locality.wait", "120s")

  private def start(): Unit = {
    sc = new SparkContext("local-cluster[3,1,1024]", "test", conf)
    TestUtils.waitUntilExecutorsUp(sc, 3, 60000)
  }

  private def skewed(sc: SparkContext): ShuffledRDD[Int, Array[Byte], Array[Byte]] =
    SkewedShuffles.onExecutor(sc, spec, "0")

  private def expected(sc: SparkContext) = SkewedShuffles.expected(sc, spec)

  private def manager: AdaptiveShuffleManager =
    sc.env.shuffleManager.asInstanceOf[AdaptiveShuffleManager]

  private def highWaters(): Map[String, Long] = ExecutorProbe.onEach(sc, Seq("0", "1", "2"))(() =>
    SparkEnv.get.shuffleManager.asInstanceOf[AdaptiveShuffleManager].shuffleStore.get.highWater)

  test("extreme skew: remote-memory spill, no store over its size, nothing read from disk") {
    start()
    val result = shuffledDigest(skewed(sc))
    assert(result === expected(sc))
    val report = manager.storeReport.get
    assert(report.acceptedLocally > 0 && report.spilledToPeers > 0, report)
    // The stores (15 MiB) had room for every block (about 10 MiB): none stayed on disk only.
    assert(report.leftOnDisk === 0 && report.notArrived === 0, report)
    assert(report.stores.keySet === Set("0", "1", "2"), report)
    report.stores.values.foreach(s => assert(s.placedHighWater <= storeSize, report))
    val measured = highWaters()
    assert(measured.values.forall(_ <= storeSize), measured)
    assert(measured("0") > 0 && measured("1") + measured("2") > 0, measured)
    sc.listenerBus.waitUntilEmpty()
    val app = manager.fetchMetrics.snapshot()("application").asInstanceOf[Map[String, Any]]
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    assert(read > 0 && app("bytes_from_stores") === read, app)
  }

  test("spark.authenticate and I/O encryption: spilled blocks travel and are read as Spark's") {
    sc = new SparkContext(
      "local-cluster[2,1,1024]",
      "test",
      conf
        .set(NETWORK_AUTH_ENABLED, true)
        .set(AUTH_SECRET, "pyspark-shuffle-test-secret")
        .set(IO_ENCRYPTION_ENABLED, true))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    assert(shuffledDigest(skewed(sc)) === expected(sc))
    val report = manager.storeReport.get
    assert(report.spilledToPeers > 0 && report.notArrived === 0, report)
    sc.listenerBus.waitUntilEmpty()
    val app = manager.fetchMetrics.snapshot()("application").asInstanceOf[Map[String, Any]]
    assert(app("bytes_from_stores").asInstanceOf[Long] > 0, app)
  }

  test("with UCX, blocks in other executors' stores are read by one-sided reads of that memory") {
    val libraries = sys.props.getOrElse(UCX_LIBRARY_PATH.key, "")
    assume(libraries.nonEmpty, s"the UCX libraries (${UCX_LIBRARY_PATH.key}) are not set")
    sc = new SparkContext(
      "local-cluster[3,1,1024]",
      "test",
      conf
        .set(TRANSPORT, "ucx")
        .set(UCX_LIBRARY_PATH, libraries)
        .setExecutorEnv("UCX_TLS", "tcp,self"))
    TestUtils.waitUntilExecutorsUp(sc, 3, 60000)
    // UCX starts in an executor with its first shuffle task; executors 1 and 2 run no map task
    // of the skewed shuffle, so each runs one of another shuffle first.
    Seq("1", "2").foreach { id =>
      new ShuffledRDD[Int, Int, Int](
        new PinnedRDD(sc.parallelize(1 to 10, 1).map(x => (x, x)), ExecutorProbe.location(sc, id)),
        new HashPartitioner(1)).count()
    }
    assert(shuffledDigest(skewed(sc)) === expected(sc))
    val report = manager.storeReport.get
    assert(report.spilledToPeers > 0 && report.leftOnDisk === 0, report)
    sc.listenerBus.waitUntilEmpty()
    val app = manager.fetchMetrics.snapshot()("application").asInstanceOf[Map[String, Any]]
    val bytes = app("bytes_by_transport").asInstanceOf[Map[String, Long]]
    assert(bytes.keySet === Set("local", "ucx"), app)
    assert(app("transport_fallbacks") === 0L, app)
    assert(app("bytes_from_stores") === bytes.values.sum, app)
  }

  test("dynamic allocation with shuffle tracking keeps the executors holding spilled blocks") {
    sc = new SparkContext(
      "local-cluster[3,1,1024]",
      "test",
      conf
        .set(DYN_ALLOCATION_SHUFFLE_TRACKING_ENABLED, true)
        .set(DYN_ALLOCATION_EXECUTOR_IDLE_TIMEOUT, 60L))
    // Spark's own executor monitor, on a clock of the test's: what dynamic allocation would
    // release once the idle timeout passed.
    val clock = new ManualClock()
    val monitor = new ExecutorMonitor(
      sc.conf,
      sc.schedulerBackend.asInstanceOf[ExecutorAllocationClient],
      sc.listenerBus,
      clock)
    sc.addSparkListener(monitor)
    TestUtils.waitUntilExecutorsUp(sc, 3, 60000)
    def releasable(): Set[String] = {
      sc.listenerBus.waitUntilEmpty()
      clock.advance(10 * 60 * 1000)
      monitor.timedOutExecutors().map(_._1).toSet
    }
    assert(Set("1", "2").subsetOf(releasable()), "idle executors holding nothing are released")
    val shuffled = skewed(sc)
    sc.submitMapStage(
      shuffled.dependencies.head.asInstanceOf[ShuffleDependency[Int, Array[Byte], Array[Byte]]])
      .get()
    val holders = manager.storeReport.get.stores.collect {
      case (id, s) if id != "0" && s.placedHighWater > 0 => id
    }.toSet
    assert(holders.nonEmpty)
    eventually(timeout(30.seconds), interval(100.millis)) {
      assert(releasable().intersect(holders + "0").isEmpty)
    }
  }

  test("a store lost after the map stage: its blocks are read from their files, results equal") {
    start()
    val shuffled = skewed(sc)
    val dependency =
      shuffled.dependencies.head.asInstanceOf[ShuffleDependency[Int, Array[Byte], Array[Byte]]]
    sc.submitMapStage(dependency).get()
    val before = manager.storeReport.get
    val victim = Seq("1", "2").find(id => before.stores(id).placedHighWater > 0).get
    sc.killAndReplaceExecutor(victim)
    eventually(timeout(60.seconds), interval(200.millis)) {
      assert(!manager.storeReport.get.stores.contains(victim))
    }
    assert(shuffledDigest(shuffled) === expected(sc))
    sc.listenerBus.waitUntilEmpty()
    val app = manager.fetchMetrics.snapshot()("application").asInstanceOf[Map[String, Any]]
    val read = app("bytes_by_transport").asInstanceOf[Map[String, Long]].values.sum
    // What the lost store held came from executor 0's files.
    assert(app("bytes_from_stores").asInstanceOf[Long] < read, app)
  }
}
