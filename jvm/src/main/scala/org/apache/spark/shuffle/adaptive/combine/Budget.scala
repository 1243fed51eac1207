package org.apache.spark.shuffle.adaptive.combine

/**
 * Memory a task's kept records or a partition's combined records take from the executor's
 * combine memory ([[CombineMemory]]): reserved before it is used, given back when it is freed.
 */
private[combine] trait Budget {
  def reserve(bytes: Long): Boolean
  def release(bytes: Long): Unit
}
