package org.apache.spark.shuffle.adaptive.protocol

import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}

/**
 * What the plugin's executors and driver say to each other. Every message rides in a shuffle
 * batch block id, because Spark's block server hands those to the shuffle manager's resolver (a
 * [[BlockMessage.Request]], fetched: the answer is the block's bytes) or to its
 * `putShuffleBlockAsStream` (an [[BlockMessage.Upload]], streamed), authenticated and encrypted
 * as Spark's own block transfers are ([[MessageResolver]] hands each to its feature). Only this
 * file knows how a message is spelled as an id; everything else matches on the messages, whose
 * `toString` names them in logs. Which way an id travels says how it reads: a run of a map
 * output's blocks pushed to their owner ([[BlockMessage.PushedRun]]) is spelled as Spark spells
 * the batch of those blocks, which a fetch of them asks for too.
 *
 * The spelling picks ids no map output has, and that Spark's block server parses under either
 * fetch protocol (the old one, `spark.shuffle.useOldFetchProtocol`, sends ids as names, and
 * Spark's parser takes non-negative numbers only): a request carries a map id of 2^62 and above
 * (a map task's is its attempt id, or its map index under the old protocol), an upload a range
 * no run of a map output has (reversed, or empty).
 */
private[spark] sealed trait BlockMessage {
  def shuffleId: Int
  def blockId: ShuffleBlockBatchId
}

private[spark] object BlockMessage {

  sealed trait Request extends BlockMessage
  sealed trait Upload extends BlockMessage

  /** The layout of the partitions `[start, end)` an owner merged, which seals them there. */
  final case class LayoutRequest(shuffleId: Int, start: Int, end: Int) extends Request {
    def blockId: ShuffleBlockBatchId = ShuffleBlockBatchId(shuffleId, LayoutId, start, end)
  }

  /** How many bytes of other owners' chunks an executor takes now (of any shuffle). */
  case object RoomRequest extends Request {
    def shuffleId: Int = 0
    def blockId: ShuffleBlockBatchId = ShuffleBlockBatchId(0, RoomId, 0, 1)
  }

  /**
   * What an executor merged of a shuffle so far. `mapStageEnded`: asked because a map stage of
   * the shuffle ended, whose reduce tasks are about to seal the partitions.
   */
  final case class SummaryRequest(shuffleId: Int, mapStageEnded: Boolean) extends Request {
    def blockId: ShuffleBlockBatchId = {
      val ended = if (mapStageEnded) 1 else 0
      ShuffleBlockBatchId(shuffleId, SummaryId, ended, ended + 1)
    }
  }

  /**
   * The chunks an owner holds of partitions `[start, end)`, which a layout sealed, back to back
   * in the layout's order: one request for the chunks of many small partitions.
   */
  final case class RangeRequest(shuffleId: Int, start: Int, end: Int) extends Request {
    def blockId: ShuffleBlockBatchId = ShuffleBlockBatchId(shuffleId, RangeId, start, end)
  }

  /** The owner's chunk `chunkId` (of `partition`): chunk ids are an owner's own. */
  final case class ChunkRequest(shuffleId: Int, partition: Int, chunkId: Int) extends Request {
    def blockId: ShuffleBlockBatchId =
      ShuffleBlockBatchId(shuffleId, FirstChunkId + chunkId, partition, partition + 1)
  }

  /**
   * Chunk `chunkId` of `partition`, which the partition's owner handed off to the executor
   * asked. (partition, chunk id) is unique there: owners of two table versions may each have a
   * chunk k of a partition, and an executor refuses the second.
   */
  final case class HostedChunkRequest(shuffleId: Int, partition: Int, chunkId: Int)
      extends Request {
    def blockId: ShuffleBlockBatchId =
      ShuffleBlockBatchId(shuffleId, FirstHostedId + chunkId, partition, partition + 1)
  }

  /** What an executor combined of partitions `[start, end)` (local reduction), sealing them. */
  final case class CombinedReadRequest(shuffleId: Int, start: Int, end: Int) extends Request {
    def blockId: ShuffleBlockBatchId = ShuffleBlockBatchId(shuffleId, CombinedReadId, start, end)
  }

  /**
   * The blocks of partitions `[start, end)` of map output `mapId`, pushed to the executor that
   * merges them ([[RunUpload]]: a header with each block's size, then their bytes).
   */
  final case class PushedRun(shuffleId: Int, mapId: Long, start: Int, end: Int) extends Upload {
    def blockId: ShuffleBlockBatchId = ShuffleBlockBatchId(shuffleId, mapId, start, end)
  }

  /** An owner hands chunk `chunkId` of `partition` off to a peer with room for it. */
  final case class HandOffUpload(shuffleId: Int, partition: Int, chunkId: Int) extends Upload {
    def blockId: ShuffleBlockBatchId =
      ShuffleBlockBatchId(shuffleId, chunkId, partition + 1, partition)
  }

  /** The driver sends version `version` (above 0) of a shuffle's owner table to an executor. */
  final case class TableUpload(shuffleId: Int, version: Int) extends Upload {
    def blockId: ShuffleBlockBatchId = ShuffleBlockBatchId(shuffleId, version, 0, 0)
  }

  /** The least map id of a request: no map task's (an attempt id, or a map index). */
  val FirstRequestId: Long = 1L << 62
  private val LayoutId = FirstRequestId
  private val RoomId = FirstRequestId + 1
  private val SummaryId = FirstRequestId + 2
  private val RangeId = FirstRequestId + 3
  private val CombinedReadId = FirstRequestId + 4
  private val FirstChunkId = FirstRequestId + (1L << 32)
  private val FirstHostedId = FirstRequestId + (2L << 32)

  object Request {

    /** The request a fetched `id` spells; none for every other block (a map output's). */
    def unapply(id: BlockId): Option[Request] = id match {
      case ShuffleBlockBatchId(shuffleId, mapId, start, end) if mapId >= FirstRequestId =>
        request(shuffleId, mapId, start, end)
      case _ => None
    }
  }

  object Upload {

    /** The upload a streamed `id` spells; none for every other (block migration's files). */
    def unapply(id: BlockId): Option[Upload] = id match {
      case ShuffleBlockBatchId(shuffleId, mapId, start, end) if mapId < FirstRequestId =>
        upload(shuffleId, mapId, start, end)
      case _ => None
    }
  }

  private def request(shuffleId: Int, mapId: Long, start: Int, end: Int): Option[Request] =
    mapId match {
      case LayoutId => Some(LayoutRequest(shuffleId, start, end))
      case RoomId => Some(RoomRequest)
      case SummaryId => Some(SummaryRequest(shuffleId, mapStageEnded = start == 1))
      case RangeId => Some(RangeRequest(shuffleId, start, end))
      case CombinedReadId => Some(CombinedReadRequest(shuffleId, start, end))
      case _ if mapId >= FirstHostedId =>
        Some(HostedChunkRequest(shuffleId, start, (mapId - FirstHostedId).toInt))
      case _ if mapId >= FirstChunkId =>
        Some(ChunkRequest(shuffleId, start, (mapId - FirstChunkId).toInt))
      case _ => None
    }

  private def upload(shuffleId: Int, mapId: Long, start: Int, end: Int): Option[Upload] =
    if (start > end) Some(HandOffUpload(shuffleId, end, mapId.toInt))
    else if (start == 0 && end == 0 && mapId > 0) Some(TableUpload(shuffleId, mapId.toInt))
    else if (start < end) Some(PushedRun(shuffleId, mapId, start, end))
    else None

  /**
   * Whether `id` asks for one of the plugin's answers rather than a map output's blocks: every
   * request, and only a request, carries a map id of [[FirstRequestId]] or above (asked per
   * block, so not decoded).
   */
  def isRequest(id: BlockId): Boolean = id match {
    case ShuffleBlockBatchId(_, mapId, _, _) => mapId >= FirstRequestId
    case _ => false
  }

  /** The request `id` spells, named, or the id as Spark names it. */
  def describe(id: BlockId): String = Request.unapply(id).map(_.toString).getOrElse(id.name)
}
