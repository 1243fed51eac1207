package org.apache.spark.shuffle.adaptive.flow

import org.apache.spark.storage.BlockId

/** What a sender asks a peer for, or sends it, as flow control counts it. */
private[spark] trait SizedBlock {
  def blockId: BlockId
  def size: Long
}
