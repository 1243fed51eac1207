package org.apache.spark.shuffle.adaptive

import org.scalatest.{BeforeAndAfterAll, Tag}
import org.scalatest.tags.Slow

import org.apache.spark.{ShuffleSuite, SparkContext, TestUtils}
import org.apache.spark.internal.config.{SHUFFLE_HOST_LOCAL_DISK_READING_ENABLED, SHUFFLE_MANAGER}
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{TRANSPORT, UCX_LIBRARY_PATH}
import org.apache.spark.shuffle.adaptive.dummy.ExecutorProbe
import org.apache.spark.shuffle.adaptive.testing.{DelayedShuffleBlockResolver, ServeDelay, SlowServingAdaptiveShuffleManager}

/**
 * Apache Spark's `ShuffleSuite` with reduce tasks reading the other executor's map outputs by
 * UCX one-sided reads, over the UCX transports `tls` (`UCX_TLS` of the executors). Host-local
 * reads are on too, so UCX is chosen over reading the peer's files. Cancelled without the UCX
 * libraries (`make test` installs them; see `ucx.libraryPath`).
 */
abstract class UcxShuffleSuiteBase(tls: String)
    extends ShuffleSuite
    with BeforeAndAfterAll
    with ShuffleSuiteLogsCheck {

  private def ucxLibraries: String = sys.props.getOrElse(UCX_LIBRARY_PATH.key, "")

  override def beforeAll(): Unit = {
    super.beforeAll()
    conf.set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    conf.set(TRANSPORT, "ucx")
    conf.set(UCX_LIBRARY_PATH, ucxLibraries)
    conf.set(SHUFFLE_HOST_LOCAL_DISK_READING_ENABLED, true)
    conf.setExecutorEnv("UCX_TLS", tls)
  }

  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(implicit
      pos: org.scalactic.source.Position): Unit =
    super.test(testName, testTags: _*) {
      assume(ucxLibraries.nonEmpty, s"the UCX libraries (${UCX_LIBRARY_PATH.key}) are not set")
      testFun
    }

  test("the other executor's blocks arrive by UCX reads: none served by Netty, no fallback") {
    // Serving delay 0: each executor counts the blocks its block server hands to others.
    sc = new SparkContext(
      "local-cluster[2,1,1024]",
      "test",
      conf.clone
        .set(ServeDelay.Key, "0:0,1:0")
        .set(SHUFFLE_MANAGER, classOf[SlowServingAdaptiveShuffleManager].getName))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    val remoteBytes = new java.util.concurrent.atomic.AtomicLong
    sc.addSparkListener(new SparkListener {
      override def onTaskEnd(end: SparkListenerTaskEnd): Unit = if (end.taskMetrics != null) {
        remoteBytes.addAndGet(end.taskMetrics.shuffleReadMetrics.remoteBytesRead)
      }
    })
    // Map tasks prefer the two executors in turn: left to the scheduler, one executor can take
    // every tiny task, and then no block is remote. Values are grouped, not combined on the map
    // side: what an executor combines is read from its memory through its block server.
    val homes = Seq("0", "1").map(ExecutorProbe.location(sc, _))
    val sums = sc
      .makeRDD((0 until 8).map(i => (i, Seq(homes(i % 2)))))
      .flatMap(i => (i * 2500 + 1) to ((i + 1) * 2500))
      .map(x => (x % 101, x))
      .groupByKey(6)
      .mapValues(_.sum)
      .collectAsMap()
    assert(sums(0) === (101 to 19998 by 101).sum)
    val app = PluginCounters.application(sc)
    val bytes = app("bytes_by_transport").asInstanceOf[Map[String, Long]]
    assert(bytes.keySet === Set("local", "ucx"), app)
    assert(app("requests_by_transport").asInstanceOf[Map[String, Long]].keySet === Set("ucx"))
    assert(app("transport_fallbacks") === 0L)
    assert(remoteBytes.get > 0 && bytes("ucx") === remoteBytes.get)
    val served =
      ExecutorProbe.onEach(sc, Seq("0", "1"))(() => DelayedShuffleBlockResolver.servedToOthers.get)
    assert(served === Map("0" -> 0L, "1" -> 0L))
  }
}

/**
 * In `make test-all` only, as the TCP one: `make test` reads through UCX over shared memory in
 * the local-cluster A/B suites (their ucx variants) and UcxClusterSuite, and over TCP across the
 * hosts of the namespace-cluster A/B suite.
 */
@Slow
class AdaptiveUcxSharedMemoryShuffleSuite extends UcxShuffleSuiteBase("posix,cma,self")

/**
 * In `make test-all` only: UCX over TCP differs from shared memory inside UCX, and `make test`
 * reads through it across the hosts of the namespace-cluster A/B suite.
 */
@Slow
class AdaptiveUcxTcpShuffleSuite extends UcxShuffleSuiteBase("tcp,self")
