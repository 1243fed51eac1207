package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, FlowSettings, FlowState, PeerQueue, SendRule}

/**
 * The pairwise exchange of collective shuffles (CSA, DSA paper section 2): with the executors
 * in [[ExecutorOrder]] and this one at rank i of n, step k = 1 .. n-1 fetches only from rank
 * (i - k) mod n, so that at each step every executor serves one reader. A step ends when all its
 * blocks were requested and none is still in flight; requests within a step are cut and sent
 * as in the adaptive order.
 */
private[fetch] final class PairwiseScheduler(
    settings: FlowSettings,
    self: BlockManagerId,
    remote: Seq[(BlockManagerId, IndexedSeq[FetchItem])])
    extends FetchScheduler {

  // Successors in reverse are the predecessors: rank i-1, i-2, ...
  private[this] val steps: Seq[PeerQueue[FetchItem]] =
    PeerQueue.inCircularOrder(self, remote).reverse
  private[this] var step = 0

  override def next(state: FlowState): Option[BlockBatch[FetchItem]] = {
    while (step < steps.size && !steps(step).nonEmpty &&
      state.blocksInFlightTo(steps(step).address) == 0) {
      step += 1
    }
    if (step == steps.size) return None
    val current = steps(step)
    val allowed = SendRule.blocksAllowed(settings, state, current.address)
    if (current.nonEmpty && allowed > 0 &&
      SendRule.fits(settings, state, current.peek(settings.requestSize, allowed))) {
      Some(current.take(settings.requestSize, allowed))
    } else {
      None
    }
  }
}
