package org.apache.spark.shuffle.adaptive.read

import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.fetch.CompositeRequests
import org.apache.spark.shuffle.adaptive.transport.RemoteRegion

/**
 * What a reduce task reads: `blocks` by the executor that serves them (id, size, map index), at
 * first the map output tracker's view, which each [[ReadPlanPart]] then rewrites, putting
 * requests it reads whole (`bundles`: merged chunks, combined records) in the place of the blocks
 * they stand for; `exposed`, the bundles their holder lets the task read one-sided.
 * `mapOutputs`, from the same view of the map statuses as `blocks`, lists every map output of
 * the task's map range with its executor, map id and map index, empty blocks included, where a
 * part asked for them ([[ReadPlanPart.needsMapOutputs]]).
 */
private[spark] final case class ReadPlan(
    blocks: Seq[(BlockManagerId, ReadPlan.Blocks)],
    mapOutputs: Seq[(BlockManagerId, Long, Int)] = Nil,
    bundles: Map[(BlockManagerId, BlockId), BundledRead] = Map.empty,
    exposed: Map[(BlockManagerId, BlockId), RemoteRegion] = Map.empty) {

  /** Its bundles as the fetcher's composite requests, for a task on `reader`. */
  def composite(
      reader: BlockManagerId,
      batch: Boolean,
      concatenate: => Boolean): CompositeRequests =
    if (bundles.isEmpty) CompositeRequests.None
    else new Bundles(bundles, reader, batch, concatenate)
}

private[spark] object ReadPlan {

  type Blocks = collection.Seq[(BlockId, Long, Int)]
}
