package org.apache.spark.shuffle.adaptive.push.protocol

import org.apache.spark.storage.BlockManagerId

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
 * the sizes map outputs reported (the driver's placement: push/driver).
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

  /** The partitions owner `k` (of `owners`) owns. */
  def partitionsOf(k: Int): Range = firstPartition(k) until endOf(k)

  /** The same owners, less those not among `alive` executors. */
  def keepingOnly(alive: Set[String]): OwnerTable =
    copy(lost = lost ++ owners.map(_.executorId).filterNot(alive))
}

private[spark] object OwnerTable {

  def empty(numPartitions: Int): OwnerTable = OwnerTable(numPartitions, Vector.empty, Vector.empty)

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
}
