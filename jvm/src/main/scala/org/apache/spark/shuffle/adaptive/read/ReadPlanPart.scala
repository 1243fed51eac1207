package org.apache.spark.shuffle.adaptive.read

import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

/**
 * One feature's part of a reduce task's read plan (local reduction's combined records, mode=push's
 * merged chunks): whether it has a part in a task's read, how it rewrites the plan, and what it
 * counts of what it planned. [[ReadPlanner]] joins the parts of a shuffle in turn.
 */
private[spark] trait ReadPlanPart {

  def applies(task: ReduceRead): Boolean

  /** Whether it reads [[ReadPlan.mapOutputs]]. */
  def needsMapOutputs: Boolean = false

  def rewrite(task: ReduceRead, plan: ReadPlan): ReadPlanPart.Rewritten
}

private[spark] object ReadPlanPart {

  /** The plan with a part's requests in it, and what the part counts of them. */
  final case class Rewritten(plan: ReadPlan, counts: Seq[(FetchCounters.Total, Long)] = Nil)
}
