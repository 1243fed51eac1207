package org.apache.spark.shuffle.adaptive.read

import scala.collection.mutable

import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.fetch.{BatchFetch, BlockRef, FetchItem}
import org.apache.spark.shuffle.adaptive.transport.RemoteRegion

/**
 * What a reduce task reads: `blocks` of map outputs by the executor that serves them, at first
 * the map output tracker's view, and `bundles`, requests it reads whole (merged chunks, combined
 * records) by their holder, which each [[ReadPlanPart]] adds, taking out of `blocks` those they
 * are read in place of; `exposed`, the bundles their holder lets the task read one-sided.
 * `mapOutputs`, from the same view of the map statuses as `blocks`, lists every map output of
 * the task's map range with its executor, map id and map index, empty blocks included, where a
 * part asked for them ([[ReadPlanPart.needsMapOutputs]]).
 */
private[spark] final case class ReadPlan(
    blocks: Seq[(BlockManagerId, Seq[BlockRef])],
    mapOutputs: Seq[(BlockManagerId, Long, Int)] = Nil,
    bundles: Seq[(BlockManagerId, BundledRead)] = Nil,
    exposed: Map[(BlockManagerId, BlockId), RemoteRegion] = Map.empty) {

  /**
   * What the fetcher asks of each source for a task on `reader`: its bundles, then its blocks
   * that hold records (as batch blocks where the task fetches in `batch`es, which span no block
   * a bundle is read in place of).
   */
  def requests(
      reader: BlockManagerId,
      batch: Boolean,
      concatenate: => Boolean): Seq[(BlockManagerId, IndexedSeq[FetchItem])] = {
    val bySource = mutable.LinkedHashMap.empty[BlockManagerId, mutable.ArrayBuffer[FetchItem]]
    def of(source: BlockManagerId) = bySource.getOrElseUpdate(source, mutable.ArrayBuffer.empty)
    blocks.foreach { case (source, _) => of(source) }
    if (bundles.nonEmpty) {
      val joinable = concatenate
      bundles.foreach { case (holder, read) =>
        of(holder) += new BundleRequest(read, reader, batch, joinable)
      }
    }
    val acrossGaps = !bundles.exists(_._2.replacesBlocks)
    blocks.foreach { case (source, refs) =>
      // Empty blocks hold no records and are never served, so they are not fetched.
      val nonEmpty = refs.filter(_.size > 0)
      of(source) ++= (if (batch) BatchFetch.merge(nonEmpty, acrossGaps) else nonEmpty)
    }
    bySource.iterator.map { case (source, items) => source -> items.toIndexedSeq }.toSeq
  }
}
