package org.apache.spark.shuffle.adaptive.read

import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.fetch.BlockRef

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
        ReadPlan(refs(blocks), outputs)
      } else {
        ReadPlan(
          refs(
            SparkCompat.mapSizesByExecutorId(
              task.shuffleId,
              task.startMapIndex,
              task.endMapIndex,
              task.startPartition,
              task.endPartition)))
      }
    joined(task, tracked, applying)
  }

  private def refs(tracked: Iterator[(BlockManagerId, collection.Seq[(BlockId, Long, Int)])])
      : Seq[(BlockManagerId, Seq[BlockRef])] =
    tracked.map { case (source, blocks) =>
      source -> blocks.iterator.map { case (id, size, mapIndex) =>
        BlockRef(id, size, mapIndex)
      }.toSeq
    }.toSeq

  /** `tracked` rewritten by each of `parts` in turn, their counts added to the task's counters. */
  private def joined(task: ReduceRead, tracked: ReadPlan, parts: Seq[ReadPlanPart]): ReadPlan =
    parts.foldLeft(tracked) { (plan, part) =>
      val rewritten = part.rewrite(task, plan)
      rewritten.counts.foreach { case (counter, n) => task.counters.add(counter, n) }
      rewritten.plan
    }
}
