package org.apache.spark.shuffle.adaptive.metrics

/**
 * The sections of the plugin's metrics as Python reads them (`pyspark_shuffle.metrics`), named
 * once: the driver fills them, and a report with none filled is these sections empty.
 */
private[spark] object MetricsReport {

  val Sections: Seq[String] =
    Seq("application", "since_mark", "executors", "combine", "push", "losses", "cpu")

  /** A report of nothing yet: every section empty, but `application`, as given. */
  def empty(application: Map[String, Any] = Map.empty): Map[String, Any] =
    Sections.map(_ -> Map.empty[String, Any]).toMap + ("application" -> application)
}
