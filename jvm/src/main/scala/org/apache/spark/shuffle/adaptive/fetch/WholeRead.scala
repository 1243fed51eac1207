package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.BlockRef

/**
 * A request a reduce task fetches whole, whose bytes stand for blocks of map outputs: a merged
 * partition's chunk (mode=push) or the combined records of an executor (local reduction). Once
 * it arrives it is cut into parts, each served as a block of its own.
 */
private[spark] trait WholeRead {

  /**
   * How many blocks Spark's read metrics count it as: the map-output blocks it stands for where
   * they are known before it arrives, else one.
   */
  def blocks: Int

  /**
   * The blocks it stands for, by their map outputs' executors, when it failed or its bytes are
   * not what was asked for: the fetcher reads them instead (asked once per read).
   */
  def fellBack(): Seq[(BlockManagerId, BlockRef)]

  /**
   * The parts of `bytes` to serve, and blocks to read from their map outputs besides; None when
   * the bytes are not what was asked for (the fetcher then reads what [[fellBack]] answers).
   */
  def cut(bytes: ManagedBuffer): Option[WholeRead.Cut]

  /** Whether its parts are blocks a serializer may read back to back as one stream. */
  def joinable: Boolean

  /**
   * Whether it is a merged chunk (mode=push), which [[metrics.FetchCounters]] counts among the
   * chunks and the bytes read from stores (other reads count their own), and whose blocks, read
   * instead, are some of their map outputs' (others stand for every block of their executor).
   */
  def merged: Boolean
}

private[spark] object WholeRead {
  final case class Cut(parts: IndexedSeq[ChunkPart], besides: Seq[(BlockManagerId, BlockRef)])
}

/**
 * A merged chunk's read (mode=push): `bytes` long, its `parts` known from its owner's layout.
 */
private[spark] final case class ChunkRead(parts: IndexedSeq[ChunkPart], bytes: Long)
    extends WholeRead {

  override def blocks: Int = parts.size

  override def fellBack(): Seq[(BlockManagerId, BlockRef)] = parts.map(p => p.home -> p.block)

  // Another size means not the chunks the layout described (the owner lost them, or a bug):
  // their offsets would cut blocks wrongly.
  override def cut(data: ManagedBuffer): Option[WholeRead.Cut] =
    if (data.size == bytes) Some(WholeRead.Cut(parts, Nil)) else None

  override def joinable: Boolean = true

  override def merged: Boolean = true
}
