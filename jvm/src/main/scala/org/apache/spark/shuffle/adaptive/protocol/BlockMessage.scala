package org.apache.spark.shuffle.adaptive.protocol

import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}

/**
 * What the plugin's executors and driver say to each other. Every message rides in a shuffle
 * batch block id, because Spark's block server hands those to the shuffle manager's resolver (a
 * [[BlockMessage.Request]], fetched: the answer is the block's bytes) or to its
 * `putShuffleBlockAsStream` (an [[BlockMessage.Upload]], streamed), authenticated and encrypted
 * as Spark's own block transfers are ([[MessageResolver]] hands each to its feature).
 *
 * Each feature declares its own messages and numbers their kinds ([[MessageHandler.kinds]]);
 * a message's id is spelled from its kind ([[BlockMessage.spell]]). The spelling picks ids no map
 * output has, and that Spark's block server parses under either fetch protocol (the old one,
 * `spark.shuffle.useOldFetchProtocol`, sends ids as names, and Spark's parser takes non-negative
 * numbers only): a map id of 2^62 and above (a map task's is its attempt id, or its map index
 * under the old protocol), whose next 29 bits are the kind and whose low 32 bits are one number
 * of the message's own. A feature may also take uploads spelled as a map output's batch of
 * blocks (mode=push's runs of a map output pushed to their owner), which no other upload is.
 */
private[spark] trait BlockMessage {
  def shuffleId: Int
  def blockId: ShuffleBlockBatchId
}

private[spark] object BlockMessage {

  trait Request extends BlockMessage
  trait Upload extends BlockMessage

  /** The least map id of a message's id: no map task's (an attempt id, or a map index). */
  val FirstMessageId: Long = 1L << 62

  /** How many kinds of message there may be. */
  val Kinds: Int = 1 << 29

  /** The id of a message of kind `kind` carrying `number`, of partitions `[start, end)`. */
  def spell(shuffleId: Int, kind: Int, number: Int, start: Int, end: Int): ShuffleBlockBatchId = {
    require(kind >= 0 && kind < Kinds, s"message kind $kind is not in [0, $Kinds)")
    require(number >= 0, s"a message's number is not negative: $number")
    ShuffleBlockBatchId(shuffleId, FirstMessageId + (kind.toLong << 32) + number, start, end)
  }

  /** What a message's id spells: its kind, its number and its partitions. */
  final case class Words(shuffleId: Int, kind: Int, number: Int, start: Int, end: Int)

  /** The words of a message's id; none for every other block (a map output's). */
  object Spelled {
    def unapply(id: BlockId): Option[Words] = id match {
      case ShuffleBlockBatchId(shuffleId, mapId, start, end) if mapId >= FirstMessageId =>
        val spelled = mapId - FirstMessageId
        Some(Words(shuffleId, (spelled >>> 32).toInt, (spelled & 0xffffffffL).toInt, start, end))
      case _ => None
    }
  }

  /**
   * Whether `id` is one of the plugin's messages rather than a map output's blocks: in the fetch
   * path, a request (asked per block, so not decoded).
   */
  def isMessage(id: BlockId): Boolean = id match {
    case ShuffleBlockBatchId(_, mapId, _, _) => mapId >= FirstMessageId
    case _ => false
  }
}
