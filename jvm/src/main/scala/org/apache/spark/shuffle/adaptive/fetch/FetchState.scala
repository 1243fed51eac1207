package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.BlockManagerId

/** What a reduce task has outstanding, as a [[FetchScheduler]] sees it when choosing. */
private[spark] trait FetchState {
  /** Bytes requested and not yet consumed by the task. */
  def bytesInFlight: Long
  def requestsInFlight: Int
  def blocksInFlightTo(address: BlockManagerId): Int
  /** The task's current (elastic) in-flight limit. */
  def limit: Long
}
