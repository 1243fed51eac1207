package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockBatchId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

/**
 * One block of a map output (or a batch of its consecutive blocks) as the map output tracker
 * describes it: served as it arrives, read once more when it is found corrupt (unless it came
 * from this executor's own files, which would give the same bytes), and failing the fetch when
 * it cannot be fetched.
 */
private[spark] final case class BlockRef(blockId: BlockId, size: Long, mapIndex: Int)
    extends FetchItem {

  override def name(address: BlockManagerId): String = s"${blockId.name} from $address"

  override def arrived(
      address: BlockManagerId,
      buf: ManagedBuffer,
      via: String): FetchItem.Arrival = {
    val again = if (via == FetchCounters.Local) Nil else Seq(address -> this)
    FetchItem.Arrival(
      Seq(ReadyBlock(blockId, this, address, buf, again, onlyCopy = false, () => blockId.name)),
      1,
      buf.size,
      Nil)
  }

  override def failed(address: BlockManagerId, why: String, cause: Throwable): Seq[FetchItem.At] =
    throw fetchFailed(address, why, cause)

  /** The failure that makes Spark rerun this block's map task, as fetched from `address`. */
  def fetchFailed(address: BlockManagerId, message: String, cause: Throwable): Throwable =
    blockId match {
      case ShuffleBlockId(shuffleId, mapId, reduceId) =>
        SparkCompat.fetchFailed(address, shuffleId, mapId, mapIndex, reduceId, message, cause)
      case ShuffleBlockBatchId(shuffleId, mapId, startReduceId, _) =>
        SparkCompat.fetchFailed(address, shuffleId, mapId, mapIndex, startReduceId, message, cause)
      case other =>
        new IllegalStateException(s"Not a shuffle block: $other ($message)", cause)
    }
}
