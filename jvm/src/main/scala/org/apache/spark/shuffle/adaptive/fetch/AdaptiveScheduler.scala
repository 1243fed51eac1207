package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, BlockRef, FlowState, PeerQueue, PeerTraffic, SendRule}
import org.apache.spark.storage.BlockManagerId

/**
 * Adaptive source selection (memory-optimized shuffling paper, section IV-A): each request goes
 * to the executor with the lowest [[score]], formed at send time to about one increment, and
 * requests keep leaving while the next one fits under the limit — re-scoring each time, so that
 * requests spread over sources. With no history all scores are equal and the task
 * prefers the closest successor of its own executor in [[ExecutorOrder]], so executors start on
 * different sources.
 */
private[spark] final class AdaptiveScheduler(
    settings: FetchSettings,
    self: BlockManagerId,
    remote: Seq[(BlockManagerId, IndexedSeq[BlockRef])],
    shared: PeerTraffic)
    extends FetchScheduler {

  // In circular order from this executor, so that `minBy` breaks ties by it.
  private[this] val sources: Seq[PeerQueue] = PeerQueue.inCircularOrder(self, remote)

  override def hasPending: Boolean = sources.exists(_.nonEmpty)

  def score(executorId: String): Double = AdaptiveScheduler.score(settings, shared, executorId)

  override def next(state: FlowState): Option[BlockBatch] = {
    val candidates = sources.filter { s =>
      s.nonEmpty && SendRule.blocksAllowed(settings, state, s.address) > 0
    }
    if (candidates.isEmpty) return None
    val best = candidates.minBy(s => score(s.address.executorId))
    val allowed = SendRule.blocksAllowed(settings, state, best.address)
    // The best source's request waits until it fits rather than yielding to a worse source.
    if (SendRule.fits(settings, state, best.peek(settings.requestSize, allowed))) {
      Some(best.take(settings.requestSize, allowed))
    } else {
      None
    }
  }
}

private[spark] object AdaptiveScheduler {

  /**
   * loadWeight * (bytes this executor's tasks have in flight to the source / increment) +
   * waitWeight * (moving-average ms its tasks waited for the source's blocks). Lower is better.
   */
  def score(settings: FetchSettings, shared: PeerTraffic, executorId: String): Double =
    settings.loadWeight * shared.inFlightTo(executorId) / settings.requestSize +
      settings.waitWeight * shared.averageWaitMs(executorId)
}
