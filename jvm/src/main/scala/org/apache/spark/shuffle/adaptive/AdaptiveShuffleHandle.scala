package org.apache.spark.shuffle.adaptive

import java.io.ObjectOutputStream

import org.apache.spark.ShuffleDependency
import org.apache.spark.shuffle.{BaseShuffleHandle, ShuffleHandle}
import org.apache.spark.shuffle.adaptive.combine.CombineSpec
import org.apache.spark.shuffle.adaptive.metrics.FetchMetricsAccumulator
import org.apache.spark.shuffle.adaptive.push.protocol.OwnerTable
import org.apache.spark.shuffle.adaptive.combine.driver.CombiningExecutors

/**
 * The handle tasks receive: the sort shuffle's own handle (which picks the map-side writer), the
 * accumulator tasks report their [[metrics.FetchCounters]] through, how its records combine
 * where they do (local reduction: [[LocalReduction]]); in mode=push, the owner of each reduce
 * partition, and whether reduce tasks run at their owners (`reducedAtOwners`, the plugin's SQL
 * exchanges: [[AdaptiveShuffleDependency]]).
 *
 * The owners are placed (by `placeOwners`, on the driver) when the handle is first serialized,
 * which is when its map stage is submitted: the executors that will run the map tasks are known
 * by then, where they may not be when the shuffle is registered. The driver may place them again
 * by the sizes the first map outputs reported ([[push.driver.OwnerPlacement]]), a newer version that it
 * sends the executors' pushers itself; the handle keeps every version, since a partition's
 * blocks may be merged at its owner in any of them. No task asks the driver for a table; each
 * later serialization (a reduce stage's submission) carries every version and leaves out the
 * owners the driver lost meanwhile (`liveExecutors`), so that reduce tasks do not wait on them.
 */
private[spark] final class AdaptiveShuffleHandle[K, V, C](
    shuffleId: Int,
    dependency: ShuffleDependency[K, V, C],
    val writeHandle: ShuffleHandle,
    val fetchMetrics: FetchMetricsAccumulator,
    val numMaps: Int,
    val combine: Option[LocalReduction],
    val reducedAtOwners: Boolean,
    @transient private[this] val placeOwners: () => Option[OwnerTable],
    @transient private[this] val liveExecutors: () => Set[String])
    extends BaseShuffleHandle(shuffleId, dependency) {

  private[this] var placed: Option[Seq[OwnerTable]] = _

  /**
   * Local reduction: the executors whose map tasks folded records, with the bytes their folds
   * added, as the driver's [[combine.CombiningExecutors]] had them when the handle was last
   * serialized (a reduce stage's submission, which follows its map tasks' updates): a reduce task
   * asks them for combined records.
   */
  private[this] var combining: Map[String, Long] = Map.empty

  def combiningExecutors: Map[String, Long] = combining

  /** mode=push: every version of who merges which partitions, oldest first. */
  def ownerVersions: Option[Seq[OwnerTable]] = synchronized {
    if (placed == null) placed = Option(placeOwners).flatMap(_()).map(Seq(_))
    placed
  }

  /**
   * mode=push: the versions placed so far, without placing the first (which waits for the map
   * stage's submission): none before then.
   */
  def placedVersions: Option[Seq[OwnerTable]] = synchronized(Option(placed).flatten)

  /** mode=push: the newest version of who merges which partitions, the one pushers follow. */
  def owners: Option[OwnerTable] = ownerVersions.map(_.last)

  /**
   * Driver only, mode=push: the newest version placed, its owners the driver lost marked lost,
   * so that their partitions get no preference at once; none before the map stage's submission.
   */
  def liveOwners: Option[OwnerTable] =
    placedVersions.map(_.last.keepingOnly(liveExecutors()))

  /** Driver only: a newer version of the table. */
  def addOwnerVersion(table: OwnerTable): Unit = synchronized {
    placed = ownerVersions.map(_ :+ table)
  }

  private def writeObject(out: ObjectOutputStream): Unit = {
    synchronized {
      placed =
        if (placed == null) ownerVersions
        else placed.map(_.map(_.keepingOnly(liveExecutors())))
      combine.foreach(c => combining = c.executors.executors)
    }
    out.defaultWriteObject()
  }
}

/**
 * How a shuffle's records combine (`spec`), and the accumulator map tasks name their executor in
 * when a fold met keys held there (`executors`).
 */
private[adaptive] final case class LocalReduction(spec: CombineSpec, executors: CombiningExecutors)
