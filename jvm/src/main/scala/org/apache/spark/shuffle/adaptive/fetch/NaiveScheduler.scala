package org.apache.spark.shuffle.adaptive.fetch

import scala.collection.mutable
import scala.util.Random

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.{BlockBatch, FlowSettings, FlowState, SendRule}

/**
 * Spark's own order: requests of about one increment planned up front per executor and sent in
 * random order while they fit under the limit (one always may when nothing is in flight);
 * requests to an executor that has its maximum of blocks in flight wait their turn.
 */
private[fetch] final class NaiveScheduler(
    settings: FlowSettings,
    remote: Seq[(BlockManagerId, IndexedSeq[FetchItem])])
    extends FetchScheduler {

  private[this] val pending =
    mutable.ArrayDeque.from(Random.shuffle(remote.flatMap { case (address, blocks) =>
      BlockBatch.plan(address, blocks, settings.requestSize, settings.maxBlocksInFlightPerAddress)
    }))

  override def next(state: FlowState): Option[BlockBatch[FetchItem]] = {
    var i = 0
    while (i < pending.length && SendRule.fits(settings, state, pending(i).size)) {
      val request = pending(i)
      if (request.blocks.size > SendRule.blocksAllowed(settings, state, request.address)) {
        i += 1
      } else {
        return Some(pending.remove(i))
      }
    }
    None
  }
}
