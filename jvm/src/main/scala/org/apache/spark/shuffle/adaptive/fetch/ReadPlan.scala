package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.transport.RemoteRegion

/**
 * What a reduce task reads: `blocks` by the executor that serves them (id, size, map index), at
 * first the map output tracker's view, which each feature then rewrites, putting requests it
 * reads whole (`bundles`: merged chunks, combined records) in the place of the blocks they
 * stand for; `exposed`, the bundles their holder lets the task read one-sided.
 */
private[spark] final case class ReadPlan(
    blocks: Seq[(BlockManagerId, ReadPlan.Blocks)],
    bundles: Map[(BlockManagerId, BlockId), BundledRead] = Map.empty,
    exposed: Map[(BlockManagerId, BlockId), RemoteRegion] = Map.empty)

private[spark] object ReadPlan {

  type Blocks = collection.Seq[(BlockId, Long, Int)]
}
