package org.apache.spark.shuffle.adaptive.flow

import org.apache.spark.storage.BlockManagerId

/**
 * Spark's send rule, which every sender follows, whichever order it chooses peers in: a batch of
 * `size` bytes leaves when it fits under the limit with the bytes already in flight (and, for a
 * reduce task, its executor's [[FetchBudget]]), or when nothing is in flight (so a block larger
 * than the limit travels alone: a reduce task sends it to disk if it does not fit the budget).
 */
private[spark] object SendRule {
  def fits(limits: FlowLimits, state: FlowState, size: Long): Boolean =
    state.bytesInFlight == 0 ||
      (state.requestsInFlight < limits.maxReqsInFlight &&
        state.bytesInFlight + size <= state.limit && state.fitsBudget(size))

  /** How many more blocks may be in flight with `address`. */
  def blocksAllowed(limits: FlowLimits, state: FlowState, address: BlockManagerId): Int =
    limits.maxBlocksInFlightPerAddress - state.blocksInFlightTo(address)
}
