package org.apache.spark.shuffle.adaptive.metrics

import org.apache.spark.scheduler.StageInfo

/**
 * What the tasks of one or more stage attempts cost their executors, from Spark's own task
 * metrics: CPU (`executorCpuTime`), garbage collection (`jvmGCTime`) and run time
 * (`executorRunTime`), and how many tasks ran.
 */
private[metrics] final case class StageCpu(cpuNs: Long, gcMs: Long, runMs: Long, tasks: Int) {

  def +(other: StageCpu): StageCpu =
    StageCpu(cpuNs + other.cpuNs, gcMs + other.gcMs, runMs + other.runMs, tasks + other.tasks)

  def toMap: Map[String, Any] =
    Map(
      "executor_cpu_s" -> cpuNs / 1e9,
      "jvm_gc_s" -> gcMs / 1e3,
      "executor_run_s" -> runMs / 1e3,
      "tasks" -> tasks)
}

private[metrics] object StageCpu {

  val None = StageCpu(0L, 0L, 0L, 0)

  /**
   * A completed stage attempt's totals, which the DAG scheduler adds up from its tasks' updates
   * (failed tasks' too: their CPU was spent); nothing for a stage posted without metrics.
   */
  def of(stage: StageInfo): StageCpu =
    Option(stage.taskMetrics).fold(None) { m =>
      StageCpu(m.executorCpuTime, m.jvmGCTime, m.executorRunTime, stage.numTasks)
    }
}
