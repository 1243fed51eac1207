package org.apache.spark.shuffle.adaptive.transport.ucx

import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage

/**
 * A map output's data file as the serving executor registered it with UCX: where it is mapped
 * in that executor's memory, the packed remote key that lets a peer read it, and the file's
 * index (`offsets(r)` is where reduce partition r starts; the last entry is the file's length).
 */
private[ucx] final case class UcxRegion(address: Long, rkey: Array[Byte], offsets: Array[Long]) {

  def length: Long = offsets.last

  /** The byte range `(offset, length)` of a block of this map output within the region. */
  def rangeOf(blockId: BlockId): Option[(Long, Long)] = {
    def range(start: Int, end: Int) =
      if (start >= 0 && start < end && end < offsets.length) {
        Some((offsets(start), offsets(end) - offsets(start)))
      } else {
        None
      }
    blockId match {
      case ShuffleBlockId(_, _, reduceId) => range(reduceId, reduceId + 1)
      case ShuffleBlockBatchId(_, _, start, end) => range(start, end)
      case _ => None
    }
  }
}

private[ucx] object UcxRegion {

  /**
   * The map output a block belongs to, `(shuffleId, mapId)`; none for the plugin's requests
   * (merged chunks, combined reads), which have no region of a map output.
   */
  def mapOutputOf(blockId: BlockId): Option[(Int, Long)] = blockId match {
    case ShuffleBlockId(shuffleId, mapId, _) => Some((shuffleId, mapId))
    case id @ ShuffleBlockBatchId(shuffleId, mapId, _, _) if !BlockMessage.isMessage(id) =>
      Some((shuffleId, mapId))
    case _ => None
  }
}
