package org.apache.spark.shuffle.adaptive.metrics

import scala.concurrent.duration._

import org.scalatest.concurrent.Eventually._

import org.apache.spark.{LocalSparkContext, SparkConf, SparkContext, SparkFunSuite, TestUtils}
import org.apache.spark.shuffle.adaptive.SparkLogsCheck

/** The probe reports, under Spark's own sort shuffle, what each executor's reads held. */
class FetchMemoryProbeSuite extends SparkFunSuite with LocalSparkContext with SparkLogsCheck {

  private def conf = new SparkConf().set("spark.plugins", classOf[FetchMemoryProbe].getName)

  test("each executor reports the peak of Netty's pooled memory its shuffle reads held") {
    sc = new SparkContext(
      "local-cluster[2,1,1024]",
      "test",
      conf.set("spark.shuffle.readHostLocalDisk", "false"))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
    val rows = sc
      .parallelize(0 until 8, 8)
      .flatMap(m => (0 until 2000).map(r => (r % 16, Array.fill[Byte](256)(m.toByte))))
      .groupByKey(16)
      .map(_._2.size)
      .sum()
    assert(rows === 16000)
    eventually(timeout(30.seconds), interval(100.millis)) {
      val peaks = FetchMemoryProbe.peaks
      assert(peaks.keySet === sc.getExecutorIds().toSet)
      assert(peaks.values.forall(_("netty_pooled_bytes") > 0), peaks)
      assert(peaks.values.forall(_("netty_oom_episodes") === 0), peaks)
    }
    // Each executor's series: the bytes its reads buffered, the heap it kept, its RSS.
    eventually(timeout(30.seconds), interval(100.millis)) {
      val series = FetchMemoryProbe.series
      assert(series.keySet === sc.getExecutorIds().toSet)
      series.values.foreach { s =>
        def max(field: String) = s(field).asInstanceOf[Map[String, Seq[Long]]]("max")
        assert(max("buffered_bytes").max > 0 && max("live_heap_bytes").max > 0, s)
        assert(max("rss_bytes").max > max("live_heap_bytes").max, s)
        assert(s("start_ms").asInstanceOf[Seq[Long]].size === max("direct_bytes").size)
      }
    }
  }

  test("an executor counts the times Spark's fetcher ran out of Netty's memory") {
    sc = new SparkContext("local[1]", "test", conf)
    val flag = FetchMemoryProbe.sparkFetcherOutOfMemory.get
    try {
      flag.set(true)
      eventually(timeout(30.seconds), interval(100.millis)) {
        assert(FetchMemoryProbe.peaks.get("driver").map(_("netty_oom_episodes")) === Some(1L))
      }
    } finally flag.set(false)
  }

  test("the driver keeps each executor's newest merge store totals, which only grow") {
    val driver = new FetchMemoryProbe.Driver
    val id = "store-totals"
    driver.receive(FetchMemoryProbe.Peaks(id, 1L, 1L, 0L, Map("push_late" -> 5L, "used" -> 8L)))
    driver.receive(FetchMemoryProbe.Peaks(id, 1L, 1L, 0L, Map("push_late" -> 7L, "used" -> 2L)))
    val peaks = FetchMemoryProbe.peaks(id)
    assert(peaks("store_push_late") === 7L)
    // What it holds is reported at its largest, as the other peaks are.
    assert(peaks("store_used") === 8L)
  }
}
