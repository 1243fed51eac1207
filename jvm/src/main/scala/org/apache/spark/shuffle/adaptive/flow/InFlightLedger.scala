package org.apache.spark.shuffle.adaptive.flow

import scala.collection.mutable

import org.apache.spark.storage.BlockManagerId

/**
 * What one task (a reduce task's fetcher, a sender of blocks to peers) has in flight, as the
 * [[SendRule]] sees it: bytes, requests, and blocks per peer, under its (elastic) `limit`. Its
 * bytes per peer also count in the executor-wide `traffic` that sources are chosen by; [[release]]
 * takes what the task still holds back out of it, so a task that ends early leaves no load
 * behind. A reduce task's bytes held in memory also count in its executor's fetch `budget`
 * (bytes it sends to disk do not), which [[release]] gives back too. Kept by the task's own
 * thread.
 */
private[spark] final class InFlightLedger(
    traffic: PeerTraffic,
    currentLimit: => Long,
    budget: Option[FetchBudget#Reader] = None)
    extends FlowState {

  private[this] val blocksTo = mutable.HashMap.empty[BlockManagerId, Int]
  private[this] val executorShare = new TaskShare(traffic.addInFlight)
  private[this] var bytes = 0L
  private[this] var requests = 0

  override def bytesInFlight: Long = bytes
  override def requestsInFlight: Int = requests
  override def blocksInFlightTo(address: BlockManagerId): Int = blocksTo.getOrElse(address, 0)
  override def limit: Long = currentLimit
  override def fitsBudget(size: Long): Boolean = budget.forall(_.fits(size))

  /**
   * A request of `blocks` blocks, `size` bytes in all, went to `address`; `inMemory` unless its
   * blocks go to disk.
   */
  def sent(address: BlockManagerId, blocks: Int, size: Long, inMemory: Boolean = true): Unit = {
    requests += 1
    blocksTo(address) = blocksTo.getOrElse(address, 0) + blocks
    change(address, size)
    if (inMemory) budget.foreach(_.take(size))
  }

  /**
   * One block of `size` bytes came back from `address`, delivered or failed; `lastOfRequest`
   * ends its request.
   */
  def returned(
      address: BlockManagerId,
      size: Long,
      lastOfRequest: Boolean,
      inMemory: Boolean = true): Unit = {
    blocksTo(address) -= 1
    if (lastOfRequest) requests -= 1
    change(address, -size)
    if (inMemory) budget.foreach(_.give(size))
  }

  private def change(address: BlockManagerId, delta: Long): Unit = {
    bytes += delta
    executorShare.change(address.executorId, delta)
  }

  def release(): Unit = {
    executorShare.release()
    budget.foreach(_.leave())
  }
}
