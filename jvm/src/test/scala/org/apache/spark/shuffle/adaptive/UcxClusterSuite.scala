package org.apache.spark.shuffle.adaptive

import java.io.File
import java.nio.file.Files

import scala.concurrent.duration._
import scala.jdk.CollectionConverters._

import org.scalatest.concurrent.Eventually

import org.apache.spark.{LocalSparkContext, ShuffleDependency, SparkConf, SparkContext, SparkException, SparkFunSuite, TestUtils}
import org.apache.spark.internal.config.{AUTH_SECRET, IO_ENCRYPTION_ENABLED, NETWORK_AUTH_ENABLED, SHUFFLE_HOST_LOCAL_DISK_READING_ENABLED, SHUFFLE_MANAGER}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, PUSH_PLACE_BY_SIZE_AFTER, TRANSPORT, UCX_LIBRARY_PATH}
import org.apache.spark.shuffle.adaptive.dummy.ExecutorProbe
import org.apache.spark.shuffle.adaptive.testing.{DelayedShuffleBlockResolver, ServeDelay, SlowServingAdaptiveShuffleManager}
import org.apache.spark.shuffle.adaptive.transport.ucx.UcxRegistry

/**
 * The UCX transport on `local-cluster`: what `auto` and `ucx` do without the UCX libraries, with
 * I/O encryption and with `spark.authenticate`, merged chunks of mode=push, and an executor lost
 * after its map outputs were registered.
 */
class UcxClusterSuite
    extends SparkFunSuite
    with LocalSparkContext
    with SparkLogsCheck
    with Eventually {

  private def ucxLibraries: String = sys.props.getOrElse(UCX_LIBRARY_PATH.key, "")

  private def conf(transport: String, libraries: String): SparkConf = new SparkConf()
    .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    .set(TRANSPORT, transport)
    .set(UCX_LIBRARY_PATH, libraries)
    .set(SHUFFLE_HOST_LOCAL_DISK_READING_ENABLED, false)
    .set("spark.task.maxFailures", "2")
    .setExecutorEnv("UCX_TLS", "posix,cma,self")

  // Values grouped, not combined on the map side: what an executor combines is read from its
  // memory through its block server, and this suite reads map-output files.
  private def sums(sc: SparkContext): collection.Map[Int, Int] =
    sc.parallelize(1 to 20000, 8)
      .map(x => (x % 101, x))
      .groupByKey(6)
      .mapValues(_.sum)
      .collectAsMap()

  private val expected = (1 to 20000).groupBy(_ % 101).map { case (k, xs) => k -> xs.sum }

  private def appCounters(sc: SparkContext): Map[String, Any] = PluginCounters.application(sc)

  /** Bytes the application's reduce tasks read, by the path that served them. */
  private def bytesByTransport(sc: SparkContext): Map[String, Long] =
    appCounters(sc)("bytes_by_transport").asInstanceOf[Map[String, Long]]

  /**
   * The executors' logs, in local-cluster's temporary work dirs: with the tests' log4j2
   * configuration, each executor logs to `jvm/target/unit-tests.log` under its working dir.
   */
  private def executorLogs(sc: SparkContext): Seq[String] = {
    val tmp = new File(sys.props("java.io.tmpdir")).toPath
    Files
      .walk(tmp, 3)
      .iterator()
      .asScala
      .filter(_.getFileName.toString == sc.applicationId)
      .flatMap(app => Files.walk(app).iterator().asScala)
      .filter(_.getFileName.toString == "unit-tests.log")
      .map(p => new String(Files.readAllBytes(p)))
      .toSeq
  }

  test("auto without the UCX libraries reads through Netty and each executor says why") {
    sc = new SparkContext(
      "local-cluster[2,1,1024]",
      "test",
      conf("auto", "/nonexistent/ucx")
        .set(ServeDelay.Key, "0:0,1:0")
        .set(SHUFFLE_MANAGER, classOf[SlowServingAdaptiveShuffleManager].getName))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    assert(sums(sc) === expected)
    val counters = appCounters(sc)
    assert(
      counters("bytes_by_transport").asInstanceOf[Map[String, Long]].keySet ===
        Set("local", "netty"),
      counters)
    // The counter that shows UCX reads leave the block server idle does count Netty's serving.
    val served =
      ExecutorProbe.onEach(sc, Seq("0", "1"))(() => DelayedShuffleBlockResolver.servedToOthers.get)
    assert(
      served.values.sum === counters("blocks_by_transport")
        .asInstanceOf[Map[String, Long]]
        .apply("netty"))
    val why = s"${TRANSPORT.key}=auto: reading other executors' blocks through Netty: " +
      "/nonexistent/ucx/libucm.so.0"
    eventually(timeout(30.seconds), interval(200.millis)) {
      assert(executorLogs(sc).count(_.contains(why)) === 2)
    }
  }

  test("ucx without the UCX libraries fails the job with an error that says what to do") {
    sc = new SparkContext("local-cluster[2,1,1024]", "test", conf("ucx", "/nonexistent/ucx"))
    // An executor still writing the error's stack to stderr as the test stops the cluster may
    // have its worker's loss logged into the middle of it, which cuts the error's text.
    expectInLogs(
      SparkLogs.Expected(errors = Seq(
        s"${TRANSPORT.key}=ucx but /nonexistent/ucx",
        "WorkerWatcher: Lost connection to worker rpc endpoint")))
    val e = intercept[SparkException](sums(sc))
    assert(e.getMessage.contains(s"${TRANSPORT.key}=ucx but /nonexistent/ucx/libucm.so.0"), e)
    assert(e.getMessage.contains("pip install 'pyspark-shuffle[ucx]'"), e)
  }

  test("with I/O encryption the regions hold the encrypted files, which reducers decrypt") {
    assume(ucxLibraries.nonEmpty, s"the UCX libraries (${UCX_LIBRARY_PATH.key}) are not set")
    sc = new SparkContext(
      "local-cluster[2,1,1024]",
      "test",
      conf("ucx", ucxLibraries).set(IO_ENCRYPTION_ENABLED, true))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    assert(sums(sc) === expected)
    val bytes = bytesByTransport(sc)
    assert(bytes.keySet === Set("local", "ucx"), bytes)
  }

  test("auto with spark.authenticate on keeps to Netty, whose connections are authenticated") {
    assume(ucxLibraries.nonEmpty, s"the UCX libraries (${UCX_LIBRARY_PATH.key}) are not set")
    sc = new SparkContext(
      "local-cluster[2,1,1024]",
      "test",
      conf("auto", ucxLibraries)
        .set(NETWORK_AUTH_ENABLED, true)
        .set(AUTH_SECRET, "pyspark-shuffle-test-secret"))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    assert(sums(sc) === expected)
    val bytes = bytesByTransport(sc)
    assert(bytes.keySet === Set("local", "netty"), bytes)
  }

  test("mode=push: owners expose the chunks they merged, which reduce tasks read one-sided") {
    assume(ucxLibraries.nonEmpty, s"the UCX libraries (${UCX_LIBRARY_PATH.key}) are not set")
    sc = new SparkContext(
      "local-cluster[2,1,1024]",
      "test",
      conf("ucx", ucxLibraries).set(MODE, "push").set(PUSH_PLACE_BY_SIZE_AFTER, 0.0))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    // Both executors own partitions: the driver knows their block managers before the map stage.
    val executors = sc.getExecutorIds()
    executors.foreach(ExecutorProbe.location(sc, _))
    // 40 reduce tasks, half their partitions owned by the executor a task does not run on.
    // Grouped, not combined on the map side: a shuffle that combines is not pushed.
    val shuffled = sc.parallelize(1 to 40000, 8).map(x => (x % 400, x)).groupByKey(40)
    sc.submitMapStage(shuffled.dependencies.head.asInstanceOf[ShuffleDependency[Int, Int, _]])
      .get()
    PushProbe.awaitPushed(sc, executors)
    assert(shuffled.mapValues(_.sum).collectAsMap() === (1 to 40000).groupBy(_ % 400).map {
      case (k, xs) => k -> xs.sum
    })
    val counters = appCounters(sc)
    def count(name: String) = counters(name).asInstanceOf[Long]
    assert(count("chunks_one_sided") > 0 && count("chunk_fallbacks") === 0, counters)
    // Every byte from the other executor came by one-sided reads, chunks included.
    assert(bytesByTransport(sc).keySet === Set("local", "ucx"), counters)
    assert(count("bytes_from_stores") > 0, counters)
  }

  test("an executor lost after registering its map outputs: its regions go, results stay right") {
    assume(ucxLibraries.nonEmpty, s"the UCX libraries (${UCX_LIBRARY_PATH.key}) are not set")
    sc = new SparkContext("local-cluster[2,1,1024]", "test", conf("ucx", ucxLibraries))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    val shuffled = sc.parallelize(1 to 20000, 8).map(x => (x % 101, x)).reduceByKey(_ + _, 6)
    val dependency = shuffled.dependencies.head.asInstanceOf[ShuffleDependency[Int, Int, Int]]
    sc.submitMapStage(dependency).get()
    val registry = UcxRegistry.ref(sc.env)
    def worker(id: String) = registry.askSync[Option[Array[Byte]]](UcxRegistry.LookUpWorker(id))
    def regions(id: String) = registry.askSync[Array[(Long, Long, Array[Byte], Array[Long])]](
      UcxRegistry.LookUpRegions(id, dependency.shuffleId, 0L until 100L))
    val executors = sc.getExecutorIds()
    assert(executors.forall(id => worker(id).isDefined))
    val victim = executors.find(id => regions(id).nonEmpty).get

    killAndReplaceExecutor(victim)
    eventually(timeout(60.seconds), interval(200.millis)) {
      assert(worker(victim).isEmpty && regions(victim).isEmpty)
    }
    assert(shuffled.collectAsMap() === expected)
  }
}
