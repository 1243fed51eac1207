package org.apache.spark.shuffle.adaptive.flow

import scala.collection.mutable

import org.apache.spark.storage.BlockManagerId

/**
 * What one task (a reduce task's fetcher, a sender of blocks to peers) has in flight, as the
 * [[SendRule]] sees it: bytes, requests, and blocks per peer, under its (elastic) `limit`. Its
 * bytes per peer also count in the executor-wide `traffic` that sources are chosen by; [[release]]
 * takes what the task still holds back out of it, so a task that ends early leaves no load
 * behind. Kept by the task's own thread.
 */
private[spark] final class InFlightLedger(traffic: PeerTraffic, currentLimit: => Long)
    extends FlowState {

  private[this] val blocksTo = mutable.HashMap.empty[BlockManagerId, Int]
  private[this] val executorShare = new TaskShare(traffic.addInFlight)
  private[this] var bytes = 0L
  private[this] var requests = 0

  override def bytesInFlight: Long = bytes
  override def requestsInFlight: Int = requests
  override def blocksInFlightTo(address: BlockManagerId): Int = blocksTo.getOrElse(address, 0)
  override def limit: Long = currentLimit

  /** A request of `blocks` blocks, `size` bytes in all, went to `address`. */
  def sent(address: BlockManagerId, blocks: Int, size: Long): Unit = {
    requests += 1
    blocksTo(address) = blocksTo.getOrElse(address, 0) + blocks
    change(address, size)
  }

  /**
   * One block of `size` bytes came back from `address`, delivered or failed; `lastOfRequest`
   * ends its request.
   */
  def returned(address: BlockManagerId, size: Long, lastOfRequest: Boolean): Unit = {
    blocksTo(address) -= 1
    if (lastOfRequest) requests -= 1
    change(address, -size)
  }

  private def change(address: BlockManagerId, delta: Long): Unit = {
    bytes += delta
    executorShare.change(address.executorId, delta)
  }

  def release(): Unit = executorShare.release()
}
