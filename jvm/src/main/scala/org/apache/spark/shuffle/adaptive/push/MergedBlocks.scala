package org.apache.spark.shuffle.adaptive.push

import java.nio.ByteBuffer

import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}

/**
 * One chunk of a reduce partition merged at its owner: the blocks of `mapIds` (map ids as in
 * their MapStatus) in that order, `lengths` bytes each, back to back.
 */
private[spark] final case class MergedChunk(
    chunkId: Int,
    partition: Int,
    mapIds: Array[Long],
    lengths: Array[Long]) {
  def bytes: Long = lengths.sum
}

/**
 * How reduce tasks name what an owner merged. They are shuffle batch block ids, which Spark's
 * block server hands to the shuffle manager's resolver and its fetch protocol carries in one
 * request, with a negative map id, which no map task has: -1 for the layout of partitions
 * `[start, end)` (which seals them: nothing more is merged into them), -2 - k for chunk k.
 */
private[spark] object MergedBlocks {

  private val LayoutMapId = -1L

  def layout(shuffleId: Int, start: Int, end: Int): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, LayoutMapId, start, end)

  def chunk(shuffleId: Int, chunk: MergedChunk): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, -2L - chunk.chunkId, chunk.partition, chunk.partition + 1)

  def isMerged(id: BlockId): Boolean = id match {
    case b: ShuffleBlockBatchId => b.mapId < 0
    case _ => false
  }

  /** A layout request: `(shuffleId, start, end)`. */
  object Layout {
    def unapply(id: BlockId): Option[(Int, Int, Int)] = id match {
      case ShuffleBlockBatchId(shuffleId, LayoutMapId, start, end) => Some((shuffleId, start, end))
      case _ => None
    }
  }

  /** A chunk request: `(shuffleId, chunkId)`. */
  object Chunk {
    def unapply(id: BlockId): Option[(Int, Int)] = id match {
      case ShuffleBlockBatchId(shuffleId, mapId, _, _) if mapId < LayoutMapId =>
        Some((shuffleId, (-2L - mapId).toInt))
      case _ => None
    }
  }

  /** Chunk count, then per chunk: id, partition, block count, then each block's map id and length. */
  def encode(chunks: Seq[MergedChunk]): ByteBuffer = {
    val size = 4 + chunks.iterator.map(c => 12 + 16 * c.mapIds.length).sum
    val out = ByteBuffer.allocate(size).putInt(chunks.size)
    chunks.foreach { c =>
      out.putInt(c.chunkId).putInt(c.partition).putInt(c.mapIds.length)
      c.mapIds.indices.foreach(i => out.putLong(c.mapIds(i)).putLong(c.lengths(i)))
    }
    out.flip()
  }

  def decode(in: ByteBuffer): Seq[MergedChunk] = {
    val buf = in.duplicate()
    Seq.fill(buf.getInt) {
      val chunkId = buf.getInt
      val partition = buf.getInt
      val count = buf.getInt
      val mapIds = new Array[Long](count)
      val lengths = new Array[Long](count)
      (0 until count).foreach { i =>
        mapIds(i) = buf.getLong
        lengths(i) = buf.getLong
      }
      MergedChunk(chunkId, partition, mapIds, lengths)
    }
  }
}
