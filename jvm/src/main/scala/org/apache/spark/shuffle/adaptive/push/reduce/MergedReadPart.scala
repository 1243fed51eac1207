package org.apache.spark.shuffle.adaptive.push.reduce

import scala.concurrent.duration.FiniteDuration

import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable
import org.apache.spark.shuffle.adaptive.push.owner.MergeStore
import org.apache.spark.shuffle.adaptive.read.{ReadPlan, ReadPlanPart, ReduceRead}

/**
 * mode=push's part of a reduce task's read plan, for a shuffle of `numMaps` map tasks whose
 * partitions `owners` merged (every version of the table): the blocks the task reads out of
 * merged chunks, asked of the owners of its partitions ([[MergedReads]]), in place of those
 * blocks. None are read where the task reads fewer than half the map outputs (AQE's local
 * reader, narrow skew splits: a chunk is read when at least half its bytes are needed), so it
 * neither asks for layouts nor seals partitions; unless, `replicated`, a chunk is the only copy
 * of some of its blocks left.
 *
 * @param own this executor's store, which answers for the partitions it owns
 * @param requestBytes the most a request of several chunks asks for
 * @param oneSided whether the task reads the chunks their holders exposed one-sided (UCX)
 */
private[push] final class MergedReadPart(
    owners: Option[Seq[OwnerTable]],
    numMaps: Int,
    own: MergeStore,
    requestBytes: Long,
    replicated: Boolean,
    oneSided: Boolean,
    askTimeout: FiniteDuration)
    extends ReadPlanPart {

  private[this] lazy val lostHomes = owners.iterator.flatten.flatMap(_.lost).toSet

  override def applies(task: ReduceRead): Boolean =
    owners.isDefined && (readsHalf(task) || replicated && lostHomes.nonEmpty)

  private def readsHalf(task: ReduceRead): Boolean =
    2L * (math.min(task.endMapIndex, numMaps) - task.startMapIndex) >= numMaps

  override def rewrite(task: ReduceRead, plan: ReadPlan): ReadPlanPart.Rewritten =
    if (!readsHalf(task) && !plan.blocks.exists(b => lostHomes(b._1.executorId))) {
      ReadPlanPart.Rewritten(plan)
    } else {
      val env = SparkEnv.get
      // Counted as the task ends, once every part it read has been served.
      Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ =>
        ReadsAtOwner.count(task.counters, env.executorId)))
      val merged = MergedReads.plan(
        task.counters,
        task.shuffleId,
        plan.blocks,
        MergedReads.layouts(
          env,
          own,
          task.shuffleId,
          owners.get,
          task.startPartition,
          task.endPartition,
          replicated,
          askTimeout),
        requestBytes = requestBytes,
        oneSided = oneSided,
        lostHomes = lostHomes,
        // Replicated, a replica's chunk holds the blocks of one executor's map outputs only.
        reader = Some(env.executorId).filter(_ => replicated))
      ReadPlanPart.Rewritten(
        plan.copy(
          blocks = merged.blocks,
          bundles = plan.bundles ++ merged.bundles,
          exposed = plan.exposed ++ merged.exposed),
        Seq(
          FetchCounters.ChunksAtPeers -> merged.chunksAtPeers.toLong,
          FetchCounters.ChunksInRanges -> merged.chunksInRanges.toLong,
          FetchCounters.ChunksOneSided -> merged.exposed.size.toLong))
    }
}
