package org.apache.spark.shuffle.adaptive.combine

/**
 * The combined records of one reduce partition on one executor, one record per key: made,
 * folded into and written by a [[CombineEngine]]; callers hold the partition's lock.
 */
private[combine] trait CombinedRecords {

  /** Distinct keys held. */
  def rows: Long

  /** Bytes of memory held (reserved in the executor's combine memory). */
  def bytes: Long

  /** Gives the memory back; nothing may be folded in or written after. */
  def free(): Unit
}

/**
 * Combined records held as objects, one entry per key; `held` is what the engine estimates
 * they take, reserved in `budget` ([[reserve]]) before they grow.
 */
private[combine] final class CombinedObjects[K, V](budget: Budget) extends CombinedRecords {
  val map = new java.util.HashMap[K, V]
  private[this] var held = 0L

  /** Room for `bytes` more; false if there is none. */
  def reserve(bytes: Long): Boolean = budget.reserve(bytes) && {
    held += bytes
    true
  }

  override def rows: Long = map.size.toLong
  override def bytes: Long = held
  override def free(): Unit = {
    budget.release(held)
    held = 0
    map.clear()
  }
}
