package org.apache.spark.shuffle.adaptive.fetch

import java.util.concurrent.atomic.AtomicBoolean

import org.apache.spark.network.util.NettyUtils

/**
 * Executor-wide back-off after a fetch ran out of Netty's direct memory (Spark's
 * `isNettyOOMOnShuffle`): while engaged, reduce tasks that still have requests in flight send no
 * new ones, since those replies are what frees the memory. It is lifted when a request completes
 * or a block is consumed and at least `maxReqSizeShuffleToMem` bytes are free, or by a task with
 * nothing in flight (whose deferred request then goes first).
 */
private[spark] final class DirectMemoryBackoff(freeDirectMemory: () => Long) {
  private[this] val engaged = new AtomicBoolean(false)

  def active: Boolean = engaged.get

  def engage(): Unit = engaged.set(true)

  def liftIfFree(bytes: Long): Unit =
    if (engaged.get && freeDirectMemory() >= bytes) engaged.set(false)

  def lift(): Unit = engaged.set(false)
}

private[spark] object DirectMemoryBackoff {
  lazy val shared = new DirectMemoryBackoff(() => NettyUtils.freeDirectMemory())
}
