package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.util.Clock
import org.apache.spark.shuffle.adaptive.flow.{FlowSettings, PeerQueue, PeerTraffic}

/**
 * Bottleneck-first source selection. A reduce stage cannot end before the source whose remaining
 * bytes take longest at its rate has delivered them, so that source's link must never idle while
 * it has bytes for this executor; the paper's adaptive order instead steers away from a source
 * that is slow because its link is slow, and leaves it idle.
 *
 * Each source's remaining time is the executor-wide estimate of [[PeerTraffic.remainingSeconds]]
 * (what this executor's tasks still need from it over the rate it delivered at while asked). A
 * request goes to the source with the longest remaining time among those the executor has fewer
 * than [[CriticalScheduler.KeepBusy]] requests outstanding with: two, so that the next request is
 * already queued at the source when one completes, and the link does not idle for a round trip.
 * More would only queue at the source and take the task's in-flight budget from the fast sources
 * it can consume meanwhile. Once every source with blocks for the task is that busy, the rest of
 * the limit goes by the adaptive score (load and moving-average wait), so a source that is slow
 * because it is loaded gets no more than it needs to stay busy. Ties go by the circular order
 * that starts after this executor, as in the adaptive order.
 */
private[fetch] final class CriticalScheduler(
    settings: FlowSettings,
    self: BlockManagerId,
    remote: Seq[(BlockManagerId, IndexedSeq[FetchItem])],
    shared: PeerTraffic,
    clock: Clock)
    extends SourceChoosingScheduler(settings, self, remote) {

  override protected def choose(candidates: Seq[PeerQueue[FetchItem]]): PeerQueue[FetchItem] = {
    val now = clock.nanoTime()
    val unknownRate = shared.meanRate(now)
    val idle = candidates.filter { s =>
      shared.rate(s.address.executorId).requestsOutstanding < CriticalScheduler.KeepBusy
    }
    if (idle.nonEmpty) {
      idle.maxBy(s => shared.remainingSeconds(s.address.executorId, now, unknownRate))
    } else {
      candidates.minBy(s => LeastLoadedScheduler.score(settings, shared, s.address.executorId))
    }
  }
}

private[fetch] object CriticalScheduler {

  /** Requests the executor keeps outstanding with every source that has bytes for it. */
  val KeepBusy = 2
}
