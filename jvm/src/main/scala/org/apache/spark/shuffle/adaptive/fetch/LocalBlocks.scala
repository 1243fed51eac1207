package org.apache.spark.shuffle.adaptive.fetch

import java.io.File

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManager, BlockManagerId}

/** The executor the reduce task runs in: its own blocks and its scratch space. */
private[fetch] trait LocalBlocks {
  def address: BlockManagerId

  /**
   * The block's data, one reference to it, which the caller releases once it has read it, as a
   * block fetched from a peer. A file segment's references count nothing; a merged chunk's do,
   * and one retained here besides was never released: the chunk's memory waited for a GC.
   */
  def read(blockId: BlockId): ManagedBuffer

  /** A new file for a remote block too large to hold in memory. */
  def tempFile(): File
}

private[spark] final class BlockManagerLocalBlocks(blockManager: BlockManager) extends LocalBlocks {
  override def address: BlockManagerId = blockManager.blockManagerId
  override def read(blockId: BlockId): ManagedBuffer = blockManager.getLocalBlockData(blockId)
  override def tempFile(): File = blockManager.diskBlockManager.createTempLocalBlock()._2
}
