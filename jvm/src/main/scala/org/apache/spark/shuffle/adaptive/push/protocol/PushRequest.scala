package org.apache.spark.shuffle.adaptive.push.protocol

import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage

/** What mode=push asks of an executor: fetched, each answered with a block's bytes. */
private[spark] sealed trait PushRequest extends BlockMessage.Request

/** The layout of the partitions `[start, end)` an owner merged, which seals them there. */
private[push] final case class LayoutRequest(shuffleId: Int, start: Int, end: Int)
    extends PushRequest {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushRequest.LayoutKind, 0, start, end)
}

/** How many bytes of other owners' chunks an executor takes now (of any shuffle). */
private[push] case object RoomRequest extends PushRequest {
  def shuffleId: Int = 0
  def blockId: ShuffleBlockBatchId = BlockMessage.spell(0, PushRequest.RoomKind, 0, 0, 1)
}

/**
 * What an executor merged of a shuffle so far. `mapStageEnded`: asked because a map stage of
 * the shuffle ended, whose reduce tasks are about to seal the partitions.
 */
private[push] final case class SummaryRequest(shuffleId: Int, mapStageEnded: Boolean)
    extends PushRequest {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushRequest.SummaryKind, if (mapStageEnded) 1 else 0, 0, 1)
}

/**
 * The chunks an owner holds of partitions `[start, end)`, which a layout sealed, back to back
 * in the layout's order: one request for the chunks of many small partitions.
 */
private[push] final case class RangeRequest(shuffleId: Int, start: Int, end: Int)
    extends PushRequest {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushRequest.RangeKind, 0, start, end)
}

/**
 * The chunks an owner holds of `partition` whose ids are in `[first, until)`, which a layout
 * sealed, back to back in the layout's order (those handed off to peers left out): one request
 * for several chunks of a partition too large for a [[RangeRequest]] of its own.
 */
private[push] final case class ChunkRunRequest(
    shuffleId: Int,
    partition: Int,
    first: Int,
    until: Int)
    extends PushRequest {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushRequest.ChunkRunKind, partition, first, until)
}

/**
 * Which of partitions `[start, end)` reduce tasks have sealed at the owner asked: a pusher asks
 * before it pushes runs of them once their map stage ended, so that none crosses the network
 * to be dropped.
 */
private[push] final case class SealedRequest(shuffleId: Int, start: Int, end: Int)
    extends PushRequest {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushRequest.SealedKind, 0, start, end)
}

/**
 * A stage that read `shuffleId` completed: the owner asked frees the memory of the chunks of
 * the partitions reduce tasks sealed there. Answered with the bytes freed.
 */
private[push] final case class ReleaseRequest(shuffleId: Int) extends PushRequest {
  def blockId: ShuffleBlockBatchId = BlockMessage.spell(shuffleId, PushRequest.ReleaseKind, 0, 0, 1)
}

/** The owner's chunk `chunkId` (of `partition`): chunk ids are an owner's own. */
private[spark] final case class ChunkRequest(shuffleId: Int, partition: Int, chunkId: Int)
    extends PushRequest {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushRequest.ChunkKind, chunkId, partition, partition + 1)
}

/**
 * Chunk `chunkId` of `partition`, which the partition's owner handed off to the executor
 * asked. (partition, chunk id) is unique there: owners of two table versions may each have a
 * chunk k of a partition, and an executor refuses the second.
 */
private[push] final case class HostedChunkRequest(shuffleId: Int, partition: Int, chunkId: Int)
    extends PushRequest {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, PushRequest.HostedChunkKind, chunkId, partition, partition + 1)
}

private[spark] object PushRequest {
  val LayoutKind = 1
  val RoomKind = 2
  val SummaryKind = 3
  val RangeKind = 4
  val ChunkKind = 5
  val HostedChunkKind = 6
  val SealedKind = 9
  val ChunkRunKind = 10
  val ReleaseKind = 11

  val Kinds: Set[Int] = Set(
    LayoutKind,
    RoomKind,
    SummaryKind,
    RangeKind,
    ChunkKind,
    HostedChunkKind,
    SealedKind,
    ChunkRunKind,
    ReleaseKind)

  /** The request a fetched `id` spells; none for every other block. */
  def unapply(id: BlockId): Option[PushRequest] = id match {
    case BlockMessage.Spelled(BlockMessage.Words(shuffleId, kind, number, start, end)) =>
      kind match {
        case LayoutKind => Some(LayoutRequest(shuffleId, start, end))
        case RoomKind => Some(RoomRequest)
        case SummaryKind => Some(SummaryRequest(shuffleId, mapStageEnded = number == 1))
        case RangeKind => Some(RangeRequest(shuffleId, start, end))
        case ChunkKind => Some(ChunkRequest(shuffleId, start, number))
        case HostedChunkKind => Some(HostedChunkRequest(shuffleId, start, number))
        case SealedKind => Some(SealedRequest(shuffleId, start, end))
        case ChunkRunKind => Some(ChunkRunRequest(shuffleId, number, start, end))
        case ReleaseKind => Some(ReleaseRequest(shuffleId))
        case _ => None
      }
    case _ => None
  }
}
