package org.apache.spark.shuffle.adaptive.combine

import java.nio.ByteBuffer

import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}

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

/**
 * How a reduce task asks an executor for what it combined of partitions `[start, end)` of a
 * shuffle: a shuffle batch block id (which Spark's block server hands to the shuffle manager's
 * resolver and its fetch protocol carries) whose map id, `Long.MinValue`, no map task and no
 * merged read of mode=push has. The answer seals those partitions there (what is folded later
 * goes to new segments) and is their segments: a header ([[encodeHeader]]) then each segment's
 * bytes, back to back in the header's order.
 */
private[spark] object CombinedBlocks {

  private val ReadMapId = Long.MinValue

  def read(shuffleId: Int, start: Int, end: Int): ShuffleBlockBatchId =
    ShuffleBlockBatchId(shuffleId, ReadMapId, start, end)

  /** A combined read: `(shuffleId, start, end)`. */
  object Read {
    def unapply(id: BlockId): Option[(Int, Int, Int)] = id match {
      case ShuffleBlockBatchId(shuffleId, ReadMapId, start, end) => Some((shuffleId, start, end))
      case _ => None
    }
  }

  /**
   * Segment count, then per segment: partition, rows, length, checksum, map count, map ids.
   */
  def encodeHeader(segments: Seq[CombinedSegment]): ByteBuffer = {
    val size = 4 + segments.iterator.map(s => 32 + 8 * s.mapIds.length).sum
    val out = ByteBuffer.allocate(size).putInt(segments.size)
    segments.foreach { s =>
      out.putInt(s.partition).putLong(s.rows).putLong(s.length).putLong(s.checksum)
      out.putInt(s.mapIds.length)
      s.mapIds.foreach(out.putLong)
    }
    out.flip()
  }

  /** The segments, and where their bytes start in `in`. */
  def decodeHeader(in: ByteBuffer): (Seq[CombinedSegment], Int) = {
    val buf = in.duplicate()
    val segments = Seq.fill(buf.getInt) {
      val partition = buf.getInt
      val rows = buf.getLong
      val length = buf.getLong
      val checksum = buf.getLong
      CombinedSegment(partition, rows, length, checksum, Array.fill(buf.getInt)(buf.getLong))
    }
    (segments, buf.position() - in.position())
  }
}
