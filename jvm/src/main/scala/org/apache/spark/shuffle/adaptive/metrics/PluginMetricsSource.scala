package org.apache.spark.shuffle.adaptive.metrics

import java.util.concurrent.ConcurrentHashMap

import com.codahale.metrics.{Gauge, MetricRegistry}

import org.apache.spark.metrics.source.Source

/**
 * The plugin's counters in Spark's metrics system, as the source `pyspark_shuffle`, so that any
 * sink configured through `spark.metrics.conf.*` (the Prometheus servlet, JMX, CSV, Graphite)
 * exports them. Each number is a gauge named by its path in the nested maps that Python's
 * `metrics(spark)` shows, e.g. `application.bytes_by_source.1`; a gauge appears with its first
 * value (Spark's registry takes gauges added after the source was registered).
 */
private[spark] final class PluginMetricsSource extends Source {
  override val sourceName: String = PluginMetricsSource.Name
  override val metricRegistry: MetricRegistry = new MetricRegistry

  private[this] val values = new ConcurrentHashMap[String, Number]

  /** Sets every number in `snapshot` (nested maps give dotted names) under `prefix`. */
  def update(prefix: String, snapshot: Map[String, Any]): Unit = snapshot.foreach {
    case (key, nested: Map[_, _]) =>
      update(s"$prefix$key.", nested.map { case (k, v) => k.toString -> v })
    case (key, number: Number) =>
      val name = prefix + key
      if (values.put(name, number) == null) {
        val gauge: Gauge[Number] = () => values.get(name)
        metricRegistry.gauge[Gauge[Number]](name, () => gauge)
      }
    case _ =>
  }
}

private[spark] object PluginMetricsSource {
  val Name = "pyspark_shuffle"
}
