package org.apache.spark.shuffle.adaptive.flow

import org.apache.spark.storage.BlockManagerId

/** Blocks asked of, or sent to, one executor in one round trip. */
private[spark] final case class BlockBatch[B <: SizedBlock](
    address: BlockManagerId,
    blocks: IndexedSeq[B]) {
  val size: Long = blocks.iterator.map(_.size).sum
}

private[spark] object BlockBatch {

  /**
   * Cuts one executor's blocks, in order, into batches of at most `requestSize` bytes and
   * `maxBlocks` blocks, each taken as [[PeerQueue.take]] takes one: a batch closes before the
   * block that would take it over `requestSize`; a block is never split, so a larger one is a
   * batch of its own.
   */
  def plan[B <: SizedBlock](
      address: BlockManagerId,
      blocks: Iterable[B],
      requestSize: Long,
      maxBlocks: Int): Seq[BlockBatch[B]] = {
    require(requestSize > 0 && maxBlocks > 0)
    val queue = new PeerQueue(address, blocks)
    val requests = Seq.newBuilder[BlockBatch[B]]
    while (queue.nonEmpty) requests += queue.take(requestSize, maxBlocks)
    requests.result()
  }
}
