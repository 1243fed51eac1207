package org.apache.spark.shuffle.adaptive.protocol

import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.flow.ExecutorOrder

/**
 * Which executor merges each reduce partition of a shuffle (mode=push): executor `k` of
 * `owners` owns the contiguous partitions from `firstPartition(k)` up to `firstPartition(k + 1)`
 * (the last up to `numPartitions`). Contiguous ranges make the blocks one map output sends an
 * owner one run of its data file (one upload, no gathering), and let a reduce task that reads
 * several neighbouring partitions (AQE's coalesced reads) ask few owners. The table travels in the
 * shuffle handle, so neither pushers nor readers ask the driver for it. Empty when no executor
 * was known: nothing is pushed. Owners the driver has since lost (`lost`) are left out of
 * [[ranges]]: their partitions are neither pushed nor asked for, and are read from the files.
 * `version` 0 is the table placed when the map stage is submitted; later versions are placed by
 * the sizes map outputs reported ([[OwnerPlacement]]).
 */
private[spark] final case class OwnerTable(
    numPartitions: Int,
    owners: IndexedSeq[BlockManagerId],
    firstPartition: IndexedSeq[Int],
    lost: Set[String] = Set.empty,
    version: Int = 0) {
  require(owners.size == firstPartition.size, "one first partition per owner")

  def isEmpty: Boolean = owners.isEmpty

  private def endOf(k: Int): Int =
    if (k + 1 < firstPartition.size) firstPartition(k + 1) else numPartitions

  /**
   * The owners of partitions `[start, end)` with the part of that range each owns, in partition
   * order; owners of no partition in the range are left out.
   */
  def ranges(start: Int, end: Int): Seq[(BlockManagerId, Int, Int)] =
    spans(start, end).collect {
      case (k, from, until) if !lost(owners(k).executorId) => (owners(k), from, until)
    }

  /**
   * The owners of partitions `[start, end)` as [[ranges]] lists them, and after them, under
   * push.reliability=replicated, the replica of each owner's range (lost owners' ranges
   * included): whom a reduce task asks for layouts.
   */
  def holders(start: Int, end: Int, replicated: Boolean): Seq[(BlockManagerId, Int, Int)] =
    if (!replicated) ranges(start, end)
    else
      ranges(start, end) ++ spans(start, end).flatMap { case (k, from, until) =>
        replicaOf(owners(k)).map((_, from, until))
      }

  /**
   * Under push.reliability=replicated, where `owner` sends the blocks of its own map outputs
   * for its own partitions, so that losing it loses none of them: the next owner in the table
   * that is not lost; none with no such other owner.
   */
  def replicaOf(owner: BlockManagerId): Option[BlockManagerId] = {
    val k = owners.indexOf(owner)
    if (k < 0) None
    else
      (1 until owners.size).iterator
        .map(step => owners((k + step) % owners.size))
        .find(next => !lost(next.executorId))
  }

  private def spans(start: Int, end: Int): Seq[(Int, Int, Int)] =
    owners.indices.iterator
      .map(k => (k, math.max(start, firstPartition(k)), math.min(end, endOf(k))))
      .filter { case (_, from, until) => from < until }
      .toSeq

  /** The most bytes of `sizes` (one per partition) that one owner's range holds. */
  def maxLoad(sizes: Array[Double]): Double =
    if (owners.isEmpty) 0.0 else owners.indices.map(heldBy(_, sizes).sum).max

  /**
   * The bytes of `sizes` that the owners of partitions larger than an even share hold besides
   * them: reduce work on the executors whose one partition already bounds the stage. Reduce tasks
   * run at their owners in partition order, so this work delays the large partition's task and
   * shares its owner's link.
   */
  def besideOversized(sizes: Array[Double]): Double = {
    val share = sizes.sum / math.max(1, owners.size)
    owners.indices.iterator.map { k =>
      val held = heldBy(k, sizes)
      if (held.nonEmpty && held.max > share) held.sum - held.max else 0.0
    }.sum
  }

  /** The sizes of owner `k`'s partitions, of `sizes` (one per partition). */
  private def heldBy(k: Int, sizes: Array[Double]): IndexedSeq[Double] =
    (firstPartition(k) until endOf(k)).map(sizes)

  /** The same owners, less those not among `alive` executors. */
  def keepingOnly(alive: Set[String]): OwnerTable =
    copy(lost = lost ++ owners.map(_.executorId).filterNot(alive))
}

private[spark] object OwnerTable {

  def empty(numPartitions: Int): OwnerTable = OwnerTable(numPartitions, Vector.empty, Vector.empty)

  /**
   * Balanced contiguous placement of `predicted` partition sizes on `executors` (in
   * [[ExecutorOrder]]): each owner's range closes once it holds its share of what is left to
   * place, so every owner gets at least one partition while there are as many partitions as
   * owners, and a partition larger than a share is an owner's alone.
   */
  def balanced(predicted: Array[Double], executors: Seq[BlockManagerId]): OwnerTable = {
    val numPartitions = predicted.length
    val inOrder = executors.distinct.sortBy(_.executorId)(ExecutorOrder.ordering)
    val count = math.min(inOrder.size, numPartitions)
    if (count == 0) return empty(numPartitions)
    val firsts = Array.newBuilder[Int]
    var next = 0
    var left = predicted.sum
    (0 until count).foreach { k =>
      firsts += next
      val owners = count - k
      // Leave at least one partition for each owner still to come.
      val last = numPartitions - (owners - 1)
      val share = left / owners
      var held = predicted(next)
      next += 1
      while (next < last && held + predicted(next) / 2 < share) {
        held += predicted(next)
        next += 1
      }
      left -= held
    }
    OwnerTable(numPartitions, inOrder.take(count).toVector, firsts.result().toVector)
  }

  /**
   * The owners of partitions `[start, end)` in any of `versions` (with their replicas where
   * `replicated`), each with the ranges it holds in one version or another, overlapping ones
   * joined: whom a reduce task asks for layouts.
   */
  def ranges(
      versions: Seq[OwnerTable],
      start: Int,
      end: Int,
      replicated: Boolean = false): Seq[(BlockManagerId, Int, Int)] = {
    val owned = versions.flatMap(_.holders(start, end, replicated))
    owned.map(_._1).distinct.flatMap { owner =>
      val joined = List.newBuilder[(Int, Int)]
      owned
        .collect { case (`owner`, from, until) => (from, until) }
        .sorted
        .foldLeft(Option.empty[(Int, Int)]) {
          case (Some((from, until)), (f, u)) if f <= until => Some((from, math.max(until, u)))
          case (open, next) => open.foreach(joined += _); Some(next)
        }
        .foreach(joined += _)
      joined.result().map { case (from, until) => (owner, from, until) }
    }
  }

  /** With nothing known of the sizes: equal ranges. */
  def uniform(numPartitions: Int, executors: Seq[BlockManagerId]): OwnerTable =
    balanced(Array.fill(numPartitions)(1.0), executors)
}
