package org.apache.spark.shuffle.adaptive.push.protocol

import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage

/** What mode=push streams to an executor. */
private[spark] sealed trait PushUpload extends BlockMessage.Upload

/**
 * The blocks of partitions `[start, end)` of map output `mapId`, pushed to the executor that
 * merges them ([[RunUpload]]: a header with each block's size, then their bytes), spelled as
 * Spark spells the batch of those blocks.
 */
private[push] final case class PushedRun(shuffleId: Int, mapId: Long, start: Int, end: Int)
    extends PushUpload {
  def blockId: ShuffleBlockBatchId = ShuffleBlockBatchId(shuffleId, mapId, start, end)
}

/** An owner hands chunk `chunkId` of `partition` off to a peer with room for it. */
private[spark] final case class HandOffUpload(shuffleId: Int, partition: Int, chunkId: Int)
    extends PushUpload {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushUpload.HandOffKind, chunkId, partition, partition + 1)
}

/** The driver sends version `version` (above 0) of a shuffle's owner table to an executor. */
private[push] final case class TableUpload(shuffleId: Int, version: Int) extends PushUpload {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushUpload.TableKind, version, 0, 0)
}

private[spark] object PushUpload {
  val HandOffKind = 7
  val TableKind = 8

  val Kinds: Set[Int] = Set(HandOffKind, TableKind)

  /** The upload a streamed `id` spells; none for every other (block migration's files). */
  def unapply(id: BlockId): Option[PushUpload] = id match {
    case BlockMessage.Spelled(BlockMessage.Words(shuffleId, kind, number, start, _)) =>
      kind match {
        case HandOffKind => Some(HandOffUpload(shuffleId, start, number))
        case TableKind => Some(TableUpload(shuffleId, number))
        case _ => None
      }
    case ShuffleBlockBatchId(shuffleId, mapId, start, end) if start < end =>
      Some(PushedRun(shuffleId, mapId, start, end))
    case _ => None
  }
}
