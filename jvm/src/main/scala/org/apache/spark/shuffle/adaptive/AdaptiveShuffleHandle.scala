package org.apache.spark.shuffle.adaptive

import java.io.ObjectOutputStream

import org.apache.spark.ShuffleDependency
import org.apache.spark.shuffle.{BaseShuffleHandle, ShuffleHandle}
import org.apache.spark.shuffle.adaptive.metrics.FetchMetricsAccumulator
import org.apache.spark.shuffle.adaptive.push.OwnerTable

/**
 * The handle tasks receive: the sort shuffle's own handle (which picks the map-side writer) and
 * the accumulator reduce tasks report their [[metrics.FetchCounters]] through; in mode=push, the
 * owner of each reduce partition.
 *
 * The owners are placed (by `placeOwners`, on the driver) when the handle is first serialized,
 * which is when its map stage is submitted: the executors that will run the map tasks are known
 * by then, where they may not be when the shuffle is registered. Every task of the shuffle, map
 * and reduce, then carries the same table, and none asks the driver for it; each later
 * serialization (a reduce stage's submission) leaves out the owners the driver lost meanwhile
 * (`liveExecutors`), so that reduce tasks do not wait on them.
 */
private[spark] final class AdaptiveShuffleHandle[K, V, C](
    shuffleId: Int,
    dependency: ShuffleDependency[K, V, C],
    val writeHandle: ShuffleHandle,
    val fetchMetrics: FetchMetricsAccumulator,
    val numMaps: Int,
    @transient private[this] val placeOwners: () => Option[OwnerTable],
    @transient private[this] val liveExecutors: () => Set[String])
    extends BaseShuffleHandle(shuffleId, dependency) {

  private[this] var placed: Option[OwnerTable] = _

  /** mode=push: who merges which partitions. */
  def owners: Option[OwnerTable] = synchronized {
    if (placed == null) placed = Option(placeOwners).flatMap(_())
    placed
  }

  private def writeObject(out: ObjectOutputStream): Unit = {
    synchronized {
      placed = if (placed == null) owners else placed.map(_.keepingOnly(liveExecutors()))
    }
    out.defaultWriteObject()
  }
}
