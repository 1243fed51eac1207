package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.{FlowSettings, PeerQueue, PeerTraffic}

/**
 * Adaptive source selection (memory-optimized shuffling paper, section IV-A): each request goes
 * to the executor with the lowest [[score]], formed at send time to about one increment, and
 * requests keep leaving while the next one fits under the limit — re-scoring each time, so that
 * requests spread over sources. With no history all scores are equal and the task
 * prefers the closest successor of its own executor in [[ExecutorOrder]], so executors start on
 * different sources.
 */
private[fetch] final class LeastLoadedScheduler(
    settings: FlowSettings,
    self: BlockManagerId,
    remote: Seq[(BlockManagerId, IndexedSeq[FetchItem])],
    shared: PeerTraffic)
    extends SourceChoosingScheduler(settings, self, remote) {

  def score(executorId: String): Double = LeastLoadedScheduler.score(settings, shared, executorId)

  override protected def choose(candidates: Seq[PeerQueue[FetchItem]]): PeerQueue[FetchItem] =
    candidates.minBy(s => score(s.address.executorId))
}

private[fetch] object LeastLoadedScheduler {

  /**
   * loadWeight * (bytes this executor's tasks have in flight to the source / increment) +
   * waitWeight * (moving-average ms its tasks waited for the source's blocks). Lower is better.
   */
  def score(settings: FlowSettings, shared: PeerTraffic, executorId: String): Double =
    settings.loadWeight * shared.inFlightTo(executorId) / settings.requestSize +
      settings.waitWeight * shared.averageWaitMs(executorId)
}
