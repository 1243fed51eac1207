package org.apache.spark.shuffle.adaptive.combine.store

import scala.collection.mutable
import org.apache.spark.shuffle.adaptive.combine.CombinedRecords

/**
 * What one executor holds of one reduce partition of a shuffle: the records map outputs are
 * folded into (`open`), the segments sealed so far, and the map outputs whose folded rows were
 * lost (a fold that failed half way: the records it was folding into go, with every map output
 * folded into them). Callers hold its lock.
 */
private[combine] final class PartitionRecords[C >: Null <: CombinedRecords] {
  var open: C = _

  /** The map outputs folded into `open`. */
  val openMaps = mutable.ArrayBuffer.empty[Long]
  val segments = mutable.ArrayBuffer.empty[SealedSegment]
  val lost = mutable.LinkedHashSet.empty[Long]

  /** Frees `open`, which a segment now holds (or which held nothing). */
  def closeOpen(): Unit = {
    if (open != null) open.free()
    open = null
    openMaps.clear()
  }

  /**
   * `open` holds part of `mapId`'s rows: it goes, and every map output folded into it is lost
   * here (a reduce task that needs one fails its fetch, and Spark runs them again).
   */
  def poison(mapId: Long): Unit = {
    lost ++= openMaps
    lost += mapId
    closeOpen()
  }
}
