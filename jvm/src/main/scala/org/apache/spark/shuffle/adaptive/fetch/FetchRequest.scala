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
   * `maxBlocks` blocks. A request closes as soon as it reaches `requestSize`, so it overshoots by
   * less than one block; a block is never split.
   */
  def plan(
      address: BlockManagerId,
      blocks: Iterable[BlockRef],
      requestSize: Long,
      maxBlocks: Int): Seq[FetchRequest] = {
    require(requestSize > 0 && maxBlocks > 0)
    val requests = Seq.newBuilder[FetchRequest]
    val current = IndexedSeq.newBuilder[BlockRef]
    var bytes = 0L
    var count = 0
    def close(): Unit = if (count > 0) {
      requests += FetchRequest(address, current.result())
      current.clear()
      bytes = 0L
      count = 0
    }
    blocks.foreach { block =>
      current += block
      bytes += block.size
      count += 1
      if (bytes >= requestSize || count == maxBlocks) close()
    }
    close()
    requests.result()
  }
}
