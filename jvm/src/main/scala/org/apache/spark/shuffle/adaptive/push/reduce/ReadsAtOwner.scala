package org.apache.spark.shuffle.adaptive.push.reduce

import org.apache.spark.shuffle.adaptive.metrics.FetchCounters

/**
 * What a reduce task on executor `self` read out of merged chunks, counted once as it ends (from
 * the bytes each holder served it): whether it read any, whether it ran at the executor that held
 * most of them (its partition's owner, where owner placement worked), and the bytes that did not
 * cross the network because its own executor held them.
 */
private[reduce] object ReadsAtOwner {

  def count(counters: FetchCounters, self: String): Unit = {
    val fromStores = counters(FetchCounters.BytesFromStoresBySource)
    if (fromStores.nonEmpty) {
      counters.add(FetchCounters.StoredReduceTasks, 1)
      val owner = fromStores.maxBy { case (id, bytes) => (bytes, id == self) }._1
      if (owner == self) counters.add(FetchCounters.StoredReduceTasksOnOwner, 1)
      counters.add(FetchCounters.BytesAtOwner, fromStores.getOrElse(self, 0L))
    }
  }
}
