package org.apache.spark.shuffle.adaptive.combine.protocol

import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage

/** What local reduction asks of an executor. */
private[spark] sealed trait CombineRequest extends BlockMessage.Request

/** What an executor combined of partitions `[start, end)`, sealing them ([[CombinedAnswer]]). */
private[spark] final case class CombinedReadRequest(shuffleId: Int, start: Int, end: Int)
    extends CombineRequest {
  def blockId: ShuffleBlockBatchId =
    BlockMessage.spell(shuffleId, CombineRequest.CombinedReadKind, 0, start, end)
}

private[spark] object CombineRequest {
  val CombinedReadKind = 16

  val Kinds: Set[Int] = Set(CombinedReadKind)

  /** The request a fetched `id` spells; none for every other block. */
  def unapply(id: BlockId): Option[CombineRequest] = id match {
    case BlockMessage.Spelled(BlockMessage.Words(shuffleId, CombinedReadKind, _, start, end)) =>
      Some(CombinedReadRequest(shuffleId, start, end))
    case _ => None
  }
}
