package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.BlockRef

/**
 * A request a reduce task reads whole, whose bytes bundle blocks of map outputs: a merged
 * partition's chunk (mode=push) or the combined records of an executor (local reduction). Once it
 * arrives it is cut into parts, each served as a block of its own ([[Bundles]] does it for the
 * fetcher); each kind counts what became of it in its own counters.
 */
private[spark] trait BundledRead {

  /**
   * How many blocks Spark's read metrics count it as: the map-output blocks it stands for where
   * they are known before it arrives, else one.
   */
  def blocks: Int

  /**
   * The blocks it stands for, by their map outputs' executors, read from their files instead
   * when it failed or its bytes are not what was asked for (asked once per read).
   */
  def unbundled(): Seq[(BlockManagerId, BlockRef)]

  /**
   * Whether the blocks read instead may be asked for as batches spanning blocks the task does
   * not read: only where they are every block of their executor's map outputs the task reads.
   */
  def unbundledAcrossGaps: Boolean

  /**
   * The parts of `bytes` to serve, and blocks to read from their map outputs besides; None when
   * the bytes are not what was asked for (the fetcher then reads what [[unbundled]] answers).
   */
  def cut(bytes: ManagedBuffer): Option[BundledRead.Cut]

  /** Whether its parts are blocks a serializer may read back to back as one stream. */
  def joinable: Boolean

  /** `part`, read out of the bundle held at `holder`, was served to a task on `reader`. */
  def served(part: BundledPart, holder: BlockManagerId, reader: BlockManagerId): Unit
}

private[spark] object BundledRead {

  /** What an arrived bundle serves: its `parts`, and blocks read from their files besides. */
  final case class Cut(parts: IndexedSeq[BundledPart], fromFiles: Seq[(BlockManagerId, BlockRef)])
}

/**
 * A block a reduce task reads out of a bundle ([[BundledRead]]): `length` bytes at `offset`.
 * `home` is the executor whose map outputs' files serve `holds` when the part is found corrupt,
 * and which a fetch failure names: for a block of a merged partition's chunk (see push/), its map
 * output's executor and the block itself; for a segment of combined records (see combine/), the
 * executor that combined them and the blocks of the map outputs the segment holds.
 */
private[spark] final case class BundledPart(
    block: BlockRef,
    home: BlockManagerId,
    offset: Long,
    length: Long,
    holds: IndexedSeq[BlockRef])

private[spark] object BundledPart {

  /** A block of a merged chunk: read again from its map output when corrupt. */
  def apply(block: BlockRef, home: BlockManagerId, offset: Long, length: Long): BundledPart =
    BundledPart(block, home, offset, length, IndexedSeq(block))
}
