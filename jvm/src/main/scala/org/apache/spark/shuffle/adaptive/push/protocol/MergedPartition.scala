package org.apache.spark.shuffle.adaptive.push.protocol

import org.roaringbitmap.longlong.Roaring64NavigableMap

/**
 * What an owner merged of one reduce partition: `bytes` in `chunks` chunks, of the map outputs
 * in `mapIds` (map ids as in their MapStatus).
 */
private[spark] final case class MergedPartition(
    partition: Int,
    bytes: Long,
    chunks: Int,
    mapIds: Roaring64NavigableMap)
