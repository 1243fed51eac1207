package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.BlockManagerId

/**
 * Decides which remote blocks a reduce task requests next, and when: the exchange order
 * (`spark.shuffle.adaptive.fetch.order`). The fetcher calls [[next]] until it returns None,
 * each time after the state changed.
 */
private[spark] trait FetchScheduler {
  def hasPending: Boolean

  /** The next request to send now (its blocks leave the scheduler), or None to wait. */
  def next(state: FetchState): Option[FetchRequest]
}

private[spark] object FetchScheduler {
  def apply(
      settings: FetchSettings,
      self: BlockManagerId,
      remote: Seq[(BlockManagerId, IndexedSeq[BlockRef])],
      shared: ExecutorFetchState): FetchScheduler = settings.order match {
    case "naive" => new NaiveScheduler(settings, remote)
    case "pairwise" => new PairwiseScheduler(settings, self, remote)
    case "adaptive" => new AdaptiveScheduler(settings, self, remote, shared)
  }

  /**
   * Spark's send rule, which every order follows: a request of `size` bytes leaves when it fits
   * under the limit with the bytes already in flight, or when nothing is in flight (so a block
   * larger than the limit travels alone).
   */
  def fits(settings: FetchSettings, state: FetchState, size: Long): Boolean =
    state.bytesInFlight == 0 ||
      (state.requestsInFlight < settings.maxReqsInFlight &&
        state.bytesInFlight + size <= state.limit)

  def blocksAllowed(settings: FetchSettings, state: FetchState, address: BlockManagerId): Int =
    settings.maxBlocksInFlightPerAddress - state.blocksInFlightTo(address)
}
