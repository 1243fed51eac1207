package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, FlowSettings, FlowState, PeerQueue, SendRule}

/**
 * An order that forms each request at send time for one source it chooses among those that
 * have blocks left and may have more in flight; the request waits until it fits under the limit
 * rather than yielding to a source the order ranks lower. Candidates come in the circular order
 * that starts after this executor ([[PeerQueue.inCircularOrder]]), so a choice by `minBy` or
 * `maxBy` breaks ties by it.
 */
private[fetch] abstract class SourceChoosingScheduler(
    settings: FlowSettings,
    self: BlockManagerId,
    remote: Seq[(BlockManagerId, IndexedSeq[FetchItem])])
    extends FetchScheduler {

  private[this] val sources: Seq[PeerQueue[FetchItem]] = PeerQueue.inCircularOrder(self, remote)

  /** The source to ask next, of `candidates` (never empty). */
  protected def choose(candidates: Seq[PeerQueue[FetchItem]]): PeerQueue[FetchItem]

  final override def next(state: FlowState): Option[BlockBatch[FetchItem]] = {
    val candidates = sources.filter { s =>
      s.nonEmpty && SendRule.blocksAllowed(settings, state, s.address) > 0
    }
    if (candidates.isEmpty) return None
    val best = choose(candidates)
    val allowed = SendRule.blocksAllowed(settings, state, best.address)
    if (SendRule.fits(settings, state, best.peek(settings.requestSize, allowed))) {
      Some(best.take(settings.requestSize, allowed))
    } else {
      None
    }
  }
}
