package org.apache.spark.shuffle.adaptive.combine.reduce

import org.apache.spark.shuffle.adaptive.read.{ReadPlan, ReadPlanPart, ReduceRead}

/**
 * Local reduction's part of a reduce task's read plan, for a shuffle whose map tasks may fold
 * (`combines`): besides the blocks of the map outputs' files, which hold what was not folded,
 * what each executor that folded records of the shuffle (`combining`, with the bytes its folds
 * added) combined of the task's partitions, in one request ([[CombinedRead]]) to each such
 * executor that holds map outputs the task reads (every map output in the task's map range, with
 * its executor, empty blocks included).
 */
private[spark] final class CombinedReadPart(
    combines: Boolean,
    combining: Map[String, Long],
    numPartitions: Int)
    extends ReadPlanPart {

  override def applies(task: ReduceRead): Boolean = combines

  override def needsMapOutputs: Boolean = true

  override def rewrite(task: ReduceRead, plan: ReadPlan): ReadPlanPart.Rewritten = {
    val (start, end) = (task.startPartition, task.endPartition)
    val reads = plan.mapOutputs
      .filter { case (home, _, _) => combining.contains(home.executorId) }
      .groupBy(_._1)
      .map { case (home, outputs) =>
        // The executor's folds are spread over the partitions by their keys' hashes; a request
        // planned as empty would not be sent.
        val expected =
          math.max(1L, combining(home.executorId) * (end - start) / math.max(1, numPartitions))
        val kept = outputs.iterator.map { case (_, mapId, mapIndex) => mapId -> mapIndex }.toMap
        home -> new CombinedRead(
          task.shuffleId,
          start,
          end,
          home,
          kept,
          expected,
          task.counters.combine)
      }
    ReadPlanPart.Rewritten(plan.copy(bundles = plan.bundles ++ reads.toSeq))
  }
}
