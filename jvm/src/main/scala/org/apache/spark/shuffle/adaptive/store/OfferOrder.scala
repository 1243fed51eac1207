package org.apache.spark.shuffle.adaptive.store

import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{OfferOrder => Order}
import org.apache.spark.shuffle.adaptive.flow.ExecutorOrder

/**
 * Whom an executor offers the blocks its own store cannot hold, first to last
 * (`spark.shuffle.adaptive.store.offerOrder`).
 */
private[spark] object OfferOrder {

  /**
   * @param self the executor whose map output overflowed
   * @param free every other store's free bytes
   */
  def peers(order: String, self: String, free: Map[String, Long]): Seq[String] = {
    val others = free.keys.filter(_ != self).toSeq
    order match {
      // Rank i offers to i+1, i+2, ... (CSA's (i + k) mod n): executors spill to different peers.
      case Order.Pairwise => ExecutorOrder.successors(self, others)
      // Every executor offers in the same order (DSA's naive all-to-all).
      case Order.Naive => others.sorted(ExecutorOrder.ordering)
      // Skew-aware: the freest store first; equal ones in pairwise order.
      case Order.Capacity => ExecutorOrder.successors(self, others).sortBy(id => -free(id))
    }
  }
}
