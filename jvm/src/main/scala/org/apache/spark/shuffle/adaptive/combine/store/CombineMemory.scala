package org.apache.spark.shuffle.adaptive.combine.store

import org.apache.spark.shuffle.adaptive.memory.MemoryBound
import org.apache.spark.shuffle.adaptive.combine.Budget

/**
 * The bound on what one executor's local reduction holds (`combine.maxMemory`): combined
 * records and their segments in memory (`held`), and the records map tasks keep while they
 * write (`forTask`), which may take at most three quarters, so that folds find room.
 */
private[spark] final class CombineMemory(capacity: Long) {
  private[this] val store = new MemoryBound(capacity)

  def used: Long = store.used
  def highWater: Long = store.highWater

  val held: Budget = new Budget {
    override def reserve(bytes: Long): Boolean = store.reserve(bytes)
    override def release(bytes: Long): Unit = store.release(bytes)
  }

  val forTask: Budget = new Budget {
    override def reserve(bytes: Long): Boolean =
      store.used + bytes <= capacity / 4 * 3 && store.reserve(bytes)
    override def release(bytes: Long): Unit = store.release(bytes)
  }

  /** Whether sealed combined records left room to fold into; if not, segments go to disk. */
  def roomForFolds: Boolean = store.used <= capacity / 2
}
