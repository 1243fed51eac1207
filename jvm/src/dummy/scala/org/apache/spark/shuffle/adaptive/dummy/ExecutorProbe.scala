package org.apache.spark.shuffle.adaptive.dummy

import scala.reflect.ClassTag

import org.apache.spark.{SparkContext, SparkEnv}

/** Evaluates something on chosen executors, by one task pinned to each. */
private[spark] object ExecutorProbe {

  /**
   * Spark's task location string for an executor: `executor_<host>_<id>`. An executor the
   * scheduler knows may not have registered its block manager yet; it is waited for.
   */
  def location(sc: SparkContext, executorId: String, timeoutMs: Long = 60000): String = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    var found = sc.env.blockManager.master.getMemoryStatus.keys.find(_.executorId == executorId)
    while (found.isEmpty && System.nanoTime() < deadline) {
      Thread.sleep(100) // polling the driver's block manager registry; there is no event to await
      found = sc.env.blockManager.master.getMemoryStatus.keys.find(_.executorId == executorId)
    }
    val host = found
      .getOrElse(
        throw new IllegalArgumentException(
          s"executor $executorId registered no block manager within $timeoutMs ms"))
      .host
    s"executor_${host}_$executorId"
  }

  /**
   * `probe` evaluated on each of `executors`. An idle executor takes the task that prefers it at
   * once; a task that ran elsewhere fails the call.
   */
  def onEach[T: ClassTag](sc: SparkContext, executors: Seq[String])(
      probe: () => T): Map[String, T] = {
    val results = sc
      .makeRDD(executors.map(id => (id, Seq(location(sc, id)))))
      .map { wanted =>
        (wanted, SparkEnv.get.executorId, probe())
      }
      .collect()
    results.foreach { case (wanted, ran, _) =>
      require(wanted == ran, s"the probe for executor $wanted ran on executor $ran")
    }
    results.map(r => r._1 -> r._3).toMap
  }
}
