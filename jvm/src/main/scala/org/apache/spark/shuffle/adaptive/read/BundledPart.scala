package org.apache.spark.shuffle.adaptive.read

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.fetch.BlockRef

/**
 * A block a reduce task reads out of a bundle ([[BundledRead]]): `length` bytes at `offset`.
 * `home` is the executor a fetch failure names, whose map outputs' files serve `holds` in its
 * place when it is found corrupt: for a block of a merged partition's chunk (see push/), its map
 * output's executor and the block itself; for a segment of combined records (see combine/), the
 * executor that combined them, and nothing (the segment is the only copy of what it holds:
 * found corrupt, it fails the task).
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
