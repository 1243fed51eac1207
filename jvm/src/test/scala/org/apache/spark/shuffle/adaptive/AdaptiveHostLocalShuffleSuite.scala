package org.apache.spark.shuffle.adaptive

import org.apache.spark.{LocalSparkContext, SparkConf, SparkContext, SparkFunSuite, TestUtils}
import org.apache.spark.internal.config.{SHUFFLE_HOST_LOCAL_DISK_READING_ENABLED, SHUFFLE_MANAGER, SHUFFLE_SERVICE_ENABLED, SHUFFLE_SERVICE_PORT}
import org.apache.spark.network.TransportContext
import org.apache.spark.network.netty.SparkTransportConf
import org.apache.spark.network.shuffle.ExternalBlockHandler

/**
 * Host-local reads on (Spark turns them off on local-cluster unless set): the two executors share
 * this host, so every block of the other executor is read from its files by
 * [[transport.HostLocalTransport]] instead of crossing Netty. (Spark's `ShuffleSuite` runs with
 * them on in [[AdaptiveSecureShuffleSuite]].)
 */
class AdaptiveHostLocalShuffleSuite
    extends SparkFunSuite
    with LocalSparkContext
    with SparkLogsCheck {

  private val conf = new SparkConf()
    .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
    .set(SHUFFLE_HOST_LOCAL_DISK_READING_ENABLED, true)

  /**
   * Runs a shuffle on two executors; returns the application's plugin counters. Its values are
   * grouped, not combined on the map side: what an executor combined is read from its memory,
   * over the network.
   */
  private def shuffleOnTwoExecutors(): Map[String, Any] = {
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    val sums = sc
      .parallelize(1 to 20000, 8)
      .map(x => (x % 101, x))
      .groupByKey(6)
      .mapValues(_.sum)
      .collectAsMap()
    assert(sums(0) === (101 to 19998 by 101).sum)
    PluginCounters.application(sc)
  }

  private def assertReadFromFiles(app: Map[String, Any]): Unit = {
    val bytes = app("bytes_by_transport").asInstanceOf[Map[String, Long]]
    assert(bytes.keySet === Set("local", "host-local"), app)
    assert(app("transport_fallbacks") === 0L)
  }

  test("the other executor's blocks are read from its files, none over the network") {
    sc = new SparkContext("local-cluster[2,1,1024]", "test", conf)
    assertReadFromFiles(shuffleOnTwoExecutors())
  }

  test("with the external shuffle service, the dirs come from it and the reads from the files") {
    // LocalSparkCluster starts no shuffle service; one in this JVM serves both executors.
    val transportConf = SparkTransportConf.fromSparkConf(conf, "shuffle", numUsableCores = 2)
    val handler = new ExternalBlockHandler(transportConf, null)
    val context = new TransportContext(transportConf, handler)
    val server = context.createServer()
    try {
      val withService = conf.clone
        .set(SHUFFLE_SERVICE_ENABLED, true)
        .set(SHUFFLE_SERVICE_PORT, server.getPort)
      sc = new SparkContext("local-cluster[2,1,1024]", "test", withService)
      assertReadFromFiles(shuffleOnTwoExecutors())
    } finally {
      if (sc != null) sc.stop()
      sc = null
      server.close()
      handler.close()
      context.close()
    }
  }
}
