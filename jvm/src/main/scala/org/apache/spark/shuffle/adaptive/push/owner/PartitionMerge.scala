package org.apache.spark.shuffle.adaptive.push.owner

import scala.collection.mutable

import org.roaringbitmap.longlong.Roaring64NavigableMap

/** What an owner merged of one reduce partition of a shuffle; callers hold its shuffle's lock. */
private[owner] final class PartitionMerge {

  /** Map outputs merged, as map ids: task attempt ids, close together, so runs compress well. */
  val mapIds = new Roaring64NavigableMap
  val chunks = mutable.ArrayBuffer.empty[HeldChunk]
  var open: Option[HeldChunk] = None
  var isSealed = false

  /** Bytes merged, in memory and on disk. */
  var bytes = 0L
}
