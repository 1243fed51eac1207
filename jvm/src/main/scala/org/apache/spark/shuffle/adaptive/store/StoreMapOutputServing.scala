package org.apache.spark.shuffle.adaptive.store

import java.io.File

import org.apache.spark.shuffle.adaptive.metrics.StoreAccumulators
import org.apache.spark.shuffle.adaptive.transport.MapOutputServing

/**
 * Places each committed map output in the shuffle stores (mode=store), on the map task's
 * thread before its MapStatus leaves ([[MapOutputPlacer]]), and tells `metrics`, the Spark UI's
 * accumulators, how many bytes went where.
 */
private[spark] final class StoreMapOutputServing(
    placer: MapOutputPlacer,
    metrics: Option[StoreAccumulators])
    extends MapOutputServing {

  override def committed(
      shuffleId: Int,
      mapId: Long,
      dataFile: File,
      offsets: Array[Long]): Unit = {
    val blocks = MapOutputPlacer.blocks(offsets)
    val placed = placer.place(shuffleId, mapId, dataFile, offsets, blocks)
    metrics.foreach(
      _.add(
        placed.local,
        placed.remote,
        blocks.iterator.map(_._2).sum - placed.local - placed.remote))
  }

  // The store outlives this serving side (peers spill to it too): StoreExecutor empties it.
  override def removed(shuffleId: Int): Unit = ()

  override def stop(): Unit = ()
}
