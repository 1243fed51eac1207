package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.FetchOrder
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.Clock
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, FlowSettings, FlowState, PeerTraffic}

/**
 * Decides which remote blocks a reduce task requests next, and when: the exchange order
 * (`spark.shuffle.adaptive.fetch.order`). The fetcher calls [[next]] until it returns None,
 * each time after the state changed.
 */
private[fetch] trait FetchScheduler {

  /** The next request to send now (its blocks leave the scheduler), or None to wait. */
  def next(state: FlowState): Option[BlockBatch[FetchItem]]
}

private[fetch] object FetchScheduler {
  def apply(
      settings: FlowSettings,
      self: BlockManagerId,
      remote: Seq[(BlockManagerId, IndexedSeq[FetchItem])],
      shared: PeerTraffic,
      clock: Clock): FetchScheduler = settings.order match {
    case FetchOrder.Naive => new NaiveScheduler(settings, remote)
    case FetchOrder.Pairwise => new PairwiseScheduler(settings, self, remote)
    case FetchOrder.Adaptive => new LeastLoadedScheduler(settings, self, remote, shared)
    case FetchOrder.Critical => new CriticalScheduler(settings, self, remote, shared, clock)
  }
}
