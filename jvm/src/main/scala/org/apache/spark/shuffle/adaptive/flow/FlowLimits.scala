package org.apache.spark.shuffle.adaptive.flow

/** The counts a sender keeps in flight at most (Spark's `maxReqsInFlight` and per-address cap). */
private[spark] trait FlowLimits {
  def maxReqsInFlight: Int
  def maxBlocksInFlightPerAddress: Int
}
