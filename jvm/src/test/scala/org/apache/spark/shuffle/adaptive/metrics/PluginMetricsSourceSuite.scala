package org.apache.spark.shuffle.adaptive.metrics

import scala.jdk.CollectionConverters._

import com.codahale.metrics.MetricRegistry
import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.{TaskContext, TaskContextImpl}

class PluginMetricsSourceSuite extends AnyFunSuite {

  private def gauges(registry: MetricRegistry): Map[String, Any] =
    registry.getGauges.asScala.map { case (name, gauge) => name -> gauge.getValue }.toMap

  /** The value a sink reads from gauge `name` of `source`, if it has one. */
  private def value(source: PluginMetricsSource, name: String): Option[Any] =
    gauges(source.metricRegistry).get(name)

  test("nested maps become dotted gauges; later values replace earlier ones") {
    val source = new PluginMetricsSource
    source.update(
      "app.",
      Map("tasks" -> 2L, "by_source" -> Map("1" -> 10L, "2" -> 5L), "name" -> "x"))
    assert(
      gauges(source.metricRegistry) === Map(
        "app.tasks" -> 2L,
        "app.by_source.1" -> 10L,
        "app.by_source.2" -> 5L))
    source.update("app.", Map("tasks" -> 3L, "mean" -> 0.5))
    assert(value(source, "app.tasks") === Some(3L) && value(source, "app.mean") === Some(0.5))
    assert(value(source, "app.name").isEmpty)
  }

  test("gauges that appear after the source was registered reach the registry it joined") {
    // As Spark's MetricsSystem.registerSource adds a source's registry to its own.
    val spark = new MetricRegistry
    val source = new PluginMetricsSource
    spark.register("app-1.1.pyspark_shuffle", source.metricRegistry)
    source.update("fetch.", Map("bytes_by_source" -> Map("3" -> 7L)))
    assert(gauges(spark) === Map("app-1.1.pyspark_shuffle.fetch.bytes_by_source.3" -> 7L))
  }

  test("an executor merges each successful task's counters once, a failed task's not at all") {
    val metrics = new ExecutorShuffleMetrics
    def task(bytes: Long, fail: Boolean): Unit = {
      val context = TaskContext.empty()
      val counters = new FetchCounters
      counters.add(FetchCounters.ReduceTasks, 1)
      counters.served("2", "netty", bytes)
      metrics.taskReads(context, counters)
      metrics.taskReads(context, counters) // a second reader of the same shuffle in one task
      if (fail) context.markTaskFailed(new RuntimeException("lost"))
      context.asInstanceOf[TaskContextImpl].markTaskCompleted(None)
    }
    task(100, fail = false)
    task(40, fail = false)
    task(1000, fail = true)
    assert(value(metrics.source, "fetch.reduce_tasks") === Some(2L))
    assert(value(metrics.source, "fetch.bytes_by_source.2") === Some(140L))
    metrics.storeUsage(
      capacity = 64,
      used = 10,
      direct = 23,
      highWater = 30,
      pushQueued = 3,
      pushQueueHighWater = 5,
      pushRefused = 0,
      pushLate = 17,
      mergedToDisk = 7,
      releasedAfterRead = 19,
      handedOffToPeers = 11,
      hostedForPeers = 13)
    assert(value(metrics.source, "store.high_water") === Some(30L))
    assert(value(metrics.source, "store.direct") === Some(23L))
    assert(value(metrics.source, "store.handed_off_to_peers") === Some(11L))
    assert(value(metrics.source, "store.hosted_for_peers") === Some(13L))
    assert(value(metrics.source, "store.merged_to_disk") === Some(7L))
    assert(value(metrics.source, "store.push_queued") === Some(3L))
    assert(value(metrics.source, "store.push_late") === Some(17L))
    assert(value(metrics.source, "store.released_after_read") === Some(19L))
  }
}
