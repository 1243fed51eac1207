package org.apache.spark.shuffle.adaptive.protocol

/**
 * One segment of combined records: the records of `partition` folded from the map outputs
 * `mapIds` (each of which had rows for the partition) into `rows` records, `length` bytes as
 * the map side writes a block (serialized, compressed, encrypted), whose CRC32C is `checksum`.
 */
private[spark] final case class CombinedSegment(
    partition: Int,
    rows: Long,
    length: Long,
    checksum: Long,
    mapIds: Array[Long])
