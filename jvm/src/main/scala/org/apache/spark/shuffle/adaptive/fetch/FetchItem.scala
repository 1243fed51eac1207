package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.SizedBlock

/**
 * One thing a reduce task asks a source for: a block of a map output ([[BlockRef]]), or a
 * request that stands for several. The fetcher sends it within its flow limits as `size` bytes
 * and, when it comes back or fails, asks it what that makes ready and what to request in its
 * place. The task thread alone calls it.
 */
private[spark] trait FetchItem extends SizedBlock {

  /** What a log line calls it, asked of `address`. */
  def name(address: BlockManagerId): String

  /** Arrived from `address` by `via` as `buf`, which the call now owns. */
  def arrived(address: BlockManagerId, buf: ManagedBuffer, via: String): FetchItem.Arrival

  /**
   * Could not be fetched from `address` (`why`): what to request in its place. Throws the
   * fetch failure where nothing else holds what it holds, so that Spark reruns its map tasks.
   */
  def failed(address: BlockManagerId, why: String, cause: Throwable): Seq[FetchItem.At]
}

private[spark] object FetchItem {

  /** An item and the executor to ask for it. */
  type At = (BlockManagerId, FetchItem)

  /**
   * What an arrived item serves: blocks `ready` to open, in order, before any other; what Spark's
   * read metrics count it as (`blocks`, `bytes`: none where its bytes serve nothing); and what
   * to request in its place.
   */
  final case class Arrival(ready: Seq[ReadyBlock], blocks: Int, bytes: Long, instead: Seq[At])
}
