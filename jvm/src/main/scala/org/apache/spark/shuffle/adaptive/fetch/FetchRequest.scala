package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.{BlockId, BlockManagerId}

/** One shuffle block as the map output tracker describes it. */
private[spark] final case class BlockRef(blockId: BlockId, size: Long, mapIndex: Int)

/** Blocks asked from one remote executor in one round trip. */
private[spark] final case class FetchRequest(address: BlockManagerId, blocks: IndexedSeq[BlockRef]) {
  val size: Long = blocks.iterator.map(_.size).sum
}

private[spark] object FetchRequest {

  /**
   * Cuts one executor's blocks, in order, into requests of about `requestSize` bytes and at most
   * `maxBlocks` blocks, each taken as [[SourceQueue.take]] takes one: a request closes as soon as
   * it reaches `requestSize`, so it overshoots by less than one block; a block is never split.
   */
  def plan(
      address: BlockManagerId,
      blocks: Iterable[BlockRef],
      requestSize: Long,
      maxBlocks: Int): Seq[FetchRequest] = {
    require(requestSize > 0 && maxBlocks > 0)
    val queue = new SourceQueue(address, blocks)
    val requests = Seq.newBuilder[FetchRequest]
    while (queue.nonEmpty) requests += queue.take(requestSize, maxBlocks)
    requests.result()
  }
}
