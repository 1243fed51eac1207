package org.apache.spark.shuffle.adaptive.combine

import org.apache.spark.storage.ShuffleBlockId
import org.apache.spark.shuffle.adaptive.fetch.ReadPlan
import org.apache.spark.shuffle.adaptive.flow.BlockRef
import org.apache.spark.shuffle.adaptive.metrics.CombineCounters

/**
 * Local reduction's part of a reduce task's read plan, for a task that reads every map output of
 * a shuffle that combines (AQE's skew splits and local reads read only some, and would find no
 * segment they can use): from each executor with blocks for it whose folds met keys held there
 * (`combining`; what decommissioned executors left in the fallback storage, for one, was
 * combined nowhere), what that executor combined of the task's partitions, in one request in
 * place of those blocks ([[CombinedRead]]).
 */
private[spark] object CombinedReads {

  def plan(shuffleId: Int, combining: Set[String], start: Int, end: Int, counters: CombineCounters)(
      plan: ReadPlan): ReadPlan = {
    val reads = plan.blocks.iterator
      .filter { case (home, _) => combining(home.executorId) }
      .map { case (home, blocks) =>
        home -> blocks.iterator.collect {
          case (id: ShuffleBlockId, size, mapIndex) if size > 0 => BlockRef(id, size, mapIndex)
        }.toIndexedSeq
      }
      .collect {
        case (home, needed) if needed.nonEmpty =>
          home -> new CombinedRead(shuffleId, start, end, home, needed, counters)
      }
      .toMap
    plan.copy(
      blocks = plan.blocks.map { case (home, blocks) =>
        reads.get(home).fold(home -> blocks)(read => home -> Seq((read.id, read.ref.size, -1)))
      },
      bundles = plan.bundles ++ reads.map { case (home, read) => (home, read.id) -> read })
  }
}
