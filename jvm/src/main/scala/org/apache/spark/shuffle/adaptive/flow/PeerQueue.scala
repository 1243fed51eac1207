package org.apache.spark.shuffle.adaptive.flow

import scala.collection.mutable

import org.apache.spark.storage.BlockManagerId

/** The blocks a task has yet to request from (or send to) one executor, in map order. */
private[spark] final class PeerQueue[B <: SizedBlock](
    val address: BlockManagerId,
    blocks: Iterable[B]) {
  private[this] val queue = mutable.Queue.from(blocks)

  def nonEmpty: Boolean = queue.nonEmpty

  def +=(block: B): Unit = queue += block

  /**
   * Takes blocks while they stay within `size` bytes and `maxBlocks` blocks: at least one block,
   * never a split one, so only a batch of one block larger than `size` exceeds it (and a reduce
   * task's batch fits its reserve of the executor's [[FetchBudget]]).
   */
  def take(size: Long, maxBlocks: Int): BlockBatch[B] = {
    val (count, _) = headOf(size, maxBlocks)
    BlockBatch(address, IndexedSeq.fill(count)(queue.dequeue()))
  }

  /** The bytes [[take]] would take now with the same arguments. */
  def peek(size: Long, maxBlocks: Int): Long = headOf(size, maxBlocks)._2

  private def headOf(size: Long, maxBlocks: Int): (Int, Long) = {
    require(queue.nonEmpty && maxBlocks > 0)
    var bytes = 0L
    var count = 0
    while (count < queue.length && count < maxBlocks &&
      (count == 0 || bytes + queue(count).size <= size)) {
      bytes += queue(count).size
      count += 1
    }
    (count, bytes)
  }
}

private[spark] object PeerQueue {

  /** One queue per executor, the closest successor of `self` in [[ExecutorOrder]] first. */
  def inCircularOrder[B <: SizedBlock](
      self: BlockManagerId,
      remote: Seq[(BlockManagerId, IndexedSeq[B])]): Seq[PeerQueue[B]] = {
    val byId = remote.map { case (address, blocks) =>
      address.executorId -> new PeerQueue(address, blocks)
    }.toMap
    ExecutorOrder.successors(self.executorId, byId.keys.toSeq).map(byId)
  }
}
