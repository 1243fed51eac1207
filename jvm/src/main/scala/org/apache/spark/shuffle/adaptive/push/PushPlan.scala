package org.apache.spark.shuffle.adaptive.push

import scala.collection.mutable

/**
 * The driver's plan for one shuffle in mode=push: the owner of each reduce partition, whose
 * store its blocks are pushed to. Owners follow [[BalancedPlacement]] of the sizes
 * [[PartitionSizePredictor]] expects from the map outputs observed so far; a partition is pinned
 * to its owner once a block of it was placed there, and placed again only while nothing of it
 * was. Not thread-safe.
 */
private[spark] final class PushPlan(numMaps: Int, numPartitions: Int) {

  private[this] val predictor = new PartitionSizePredictor(numPartitions)
  private[this] val pinned = mutable.HashMap.empty[Int, String]
  private[this] var owners: Option[(Seq[String], Array[String])] = None

  def observe(reduceIds: Array[Int], sizes: Array[Long]): Unit = {
    predictor.observe(reduceIds, sizes)
    owners = None
  }

  /** The owner of every partition among `executors` (those with a store), or None if none. */
  def ownersAmong(executors: Seq[String]): Option[Array[String]] =
    if (executors.isEmpty) None
    else
      owners.filter(_._1 == executors).map(_._2).orElse {
        val placed = BalancedPlacement.place(predictor.predicted(numMaps), pinned, executors)
        owners = Some((executors, placed))
        Some(placed)
      }

  /** A block of `partition` was placed in its owner's store. */
  def pin(partition: Int, owner: String): Unit =
    if (!pinned.contains(partition)) {
      pinned(partition) = owner
      owners = None
    }

  /** Partitions of a lost executor are placed again (their pushed blocks are read from files). */
  def executorLost(executorId: String): Unit = {
    pinned.filterInPlace((_, owner) => owner != executorId)
    owners = None
  }

  def pinnedOwners: collection.Map[Int, String] = pinned
}
