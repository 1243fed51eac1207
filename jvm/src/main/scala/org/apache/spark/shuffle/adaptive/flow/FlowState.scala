package org.apache.spark.shuffle.adaptive.flow

import org.apache.spark.storage.BlockManagerId

/** What a task has outstanding with its peers, as the [[SendRule]] sees it. */
private[spark] trait FlowState {

  /** Bytes requested (or sent) and not yet done with. */
  def bytesInFlight: Long
  def requestsInFlight: Int
  def blocksInFlightTo(address: BlockManagerId): Int

  /** The task's current (elastic) in-flight limit. */
  def limit: Long

  /** Whether `size` more bytes fit the executor's fetch budget, where the task keeps to one. */
  def fitsBudget(size: Long): Boolean = true
}
