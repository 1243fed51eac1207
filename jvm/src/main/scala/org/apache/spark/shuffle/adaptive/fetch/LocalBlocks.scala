package org.apache.spark.shuffle.adaptive.fetch

import java.io.File

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManager, BlockManagerId}

/** The executor the reduce task runs in: its own blocks and its scratch space. */
private[fetch] trait LocalBlocks {
  def address: BlockManagerId

  /** The block's data; the caller retains the buffer while it reads and releases it after. */
  def read(blockId: BlockId): ManagedBuffer

  /** A new file for a remote block too large to hold in memory. */
  def tempFile(): File
}

private[spark] final class BlockManagerLocalBlocks(blockManager: BlockManager) extends LocalBlocks {
  override def address: BlockManagerId = blockManager.blockManagerId
  override def read(blockId: BlockId): ManagedBuffer = blockManager.getLocalBlockData(blockId)
  override def tempFile(): File = blockManager.diskBlockManager.createTempLocalBlock()._2
}
