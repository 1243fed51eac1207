package org.apache.spark.shuffle.adaptive.push.reduce

import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.fetch.BlockRef
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters
import org.apache.spark.shuffle.adaptive.read.{BundledPart, BundledRead}

/**
 * A merged chunk's read, `id` at its holder: `size` bytes long, its `parts` known from its
 * owner's layout. It counts the
 * chunks read, those read from their map outputs instead, and each part served out of a store
 * (where it crossed the network twice: held neither by the reading executor nor by its map
 * output's).
 */
private[spark] final class MergedChunkRead(
    val id: BlockId,
    val parts: IndexedSeq[BundledPart],
    val size: Long,
    counters: FetchCounters)
    extends BundledRead
    with Logging {

  override def blocks: Int = parts.size

  override def replacesBlocks: Boolean = true

  override def instead(why: String, cause: Option[Throwable]): Seq[(BlockManagerId, BlockRef)] = {
    logWarning(s"$why; reading its blocks from their map outputs", cause.orNull)
    counters.add(FetchCounters.ChunkFallbacks, 1)
    parts.map(p => p.home -> p.block)
  }

  // Another size means not the chunks the layout described (the owner lost them, or a bug):
  // their offsets would cut blocks wrongly.
  override def cut(data: ManagedBuffer): Either[String, BundledRead.Cut] =
    if (data.size != size) Left(s"the layout said $size bytes")
    else {
      counters.add(FetchCounters.ChunksRead, 1)
      Right(BundledRead.Cut(parts))
    }

  override def joinable: Boolean = true

  override def name(holder: BlockManagerId): String = s"A merged chunk from $holder"

  override def served(part: BundledPart, holder: BlockManagerId, reader: BlockManagerId): Unit =
    counters.servedFromStore(
      holder.executorId,
      part.length,
      crossedTwice = holder != reader && holder != part.home)
}
