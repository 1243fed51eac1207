package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.shuffle.adaptive.transport.BlockRef

/**
 * Requests of a reduce task that each stand for several blocks of map outputs. The fetcher asks
 * for them as for any block, within its flow limits, and hands over what comes back; what one
 * serves (blocks ready to open, and blocks to request from the map outputs in its place) is
 * theirs to decide, and so is counting what they have left to serve. The task thread alone
 * calls them.
 */
private[spark] trait CompositeRequests {

  def contains(address: BlockManagerId, id: BlockId): Boolean

  /**
   * Whether a batch of a map output's blocks may span blocks the plan leaves out (they are
   * empty); not where some were left out because a composite request serves them.
   */
  def batchesSpanGaps: Boolean

  /** `request`, one of them, arrived from `address` by `via` as `buf`, which it now owns. */
  def arrived(
      address: BlockManagerId,
      request: BlockRef,
      buf: ManagedBuffer,
      via: String): CompositeRequests.Arrival

  /** `request` could not be fetched: the blocks to request in its place. */
  def failed(
      address: BlockManagerId,
      request: BlockRef,
      cause: Throwable): Seq[(BlockManagerId, BlockRef)]

  /** The next block an arrived request serves, which goes before any other; the caller's. */
  def nextReady(): Option[ReadyBlock]

  /** Requests not arrived yet and ready blocks not taken. */
  def left: Int

  /** Releases the ready blocks not taken. */
  def release(): Unit
}

private[spark] object CompositeRequests {

  /**
   * What an arrived request counts as read in Spark's metrics (`blocks`, `bytes`: none where its
   * bytes serve nothing), and the blocks to request in its place.
   */
  final case class Arrival(blocks: Int, bytes: Long, instead: Seq[(BlockManagerId, BlockRef)])

  /** A task that reads map outputs' blocks only. */
  val None: CompositeRequests = new CompositeRequests {
    override def contains(address: BlockManagerId, id: BlockId): Boolean = false
    override def batchesSpanGaps: Boolean = true
    override def arrived(
        address: BlockManagerId,
        request: BlockRef,
        buf: ManagedBuffer,
        via: String): Arrival = throw new IllegalStateException(
      s"${request.blockId} is not composite")
    override def failed(
        address: BlockManagerId,
        request: BlockRef,
        cause: Throwable): Seq[(BlockManagerId, BlockRef)] =
      throw new IllegalStateException(s"${request.blockId} is not composite")
    override def nextReady(): Option[ReadyBlock] = scala.None
    override def left: Int = 0
    override def release(): Unit = ()
  }
}
