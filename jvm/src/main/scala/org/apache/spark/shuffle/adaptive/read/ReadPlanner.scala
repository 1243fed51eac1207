package org.apache.spark.shuffle.adaptive.read

import org.apache.spark.shuffle.adaptive.compat.SparkCompat

/**
 * Where a reduce task's read plan is put together: the map output tracker's view of the blocks it
 * reads, rewritten by each feature's part that applies, in the order given.
 */
private[spark] object ReadPlanner {

  def plan(task: ReduceRead, parts: Seq[ReadPlanPart]): ReadPlan = {
    val applying = parts.filter(_.applies(task))
    val tracked =
      if (applying.exists(_.needsMapOutputs)) {
        val (blocks, outputs) = SparkCompat.mapOutputsByExecutorId(
          task.shuffleId,
          task.startMapIndex,
          task.endMapIndex,
          task.startPartition,
          task.endPartition)
        ReadPlan(blocks.toSeq, outputs)
      } else {
        ReadPlan(
          SparkCompat
            .mapSizesByExecutorId(
              task.shuffleId,
              task.startMapIndex,
              task.endMapIndex,
              task.startPartition,
              task.endPartition)
            .toSeq)
      }
    joined(task, tracked, applying)
  }

  /** `tracked` rewritten by each of `parts` in turn, their counts added to the task's counters. */
  private def joined(task: ReduceRead, tracked: ReadPlan, parts: Seq[ReadPlanPart]): ReadPlan =
    parts.foldLeft(tracked) { (plan, part) =>
      val rewritten = part.rewrite(task, plan)
      rewritten.counts.foreach { case (counter, n) => task.counters.add(counter, n) }
      rewritten.plan
    }
}
