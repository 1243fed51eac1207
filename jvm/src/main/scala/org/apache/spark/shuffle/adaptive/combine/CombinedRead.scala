package org.apache.spark.shuffle.adaptive.combine

import java.util.zip.CRC32C

import scala.collection.mutable

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.fetch.{BundledPart, BundledRead}
import org.apache.spark.shuffle.adaptive.flow.BlockRef
import org.apache.spark.shuffle.adaptive.metrics.CombineCounters
import org.apache.spark.shuffle.adaptive.protocol.{BlockMessage, CombinedSegment, Payloads}

/**
 * A reduce task's read of what executor `home` combined of its partitions `[start, end)`, in
 * place of `needed`: the blocks of `home`'s map outputs the task needs (non-empty, of map outputs
 * Spark keeps, as the map output tracker lists them). A segment is read when every map output
 * it holds is one whose block of its partition is among `needed` (a map output without rows for
 * the partition is not named by it), it names none twice, and its checksum matches; the blocks
 * no segment read holds are read from their files, so every row is read exactly once.
 */
private[spark] final class CombinedRead(
    shuffleId: Int,
    start: Int,
    end: Int,
    home: BlockManagerId,
    needed: Seq[BlockRef],
    counters: CombineCounters)
    extends BundledRead {

  val id: BlockId = BlockMessage.CombinedReadRequest(shuffleId, start, end).blockId

  /** What the request is planned as: at most the bytes of the blocks it stands for. */
  def ref: BlockRef = BlockRef(id, needed.iterator.map(_.size).sum, -1)

  // Which blocks its segments stand for is known once it arrives: it is one block fetched.
  override def blocks: Int = 1

  override def unbundled(): Seq[(BlockManagerId, BlockRef)] = {
    counters.add(CombineCounters.ReadFallbacks, 1)
    counters.add(CombineCounters.BlocksFromFiles, needed.size)
    needed.map(home -> _)
  }

  // It stands for every block of `home`'s map outputs the task reads.
  override def unbundledAcrossGaps: Boolean = true

  // Each segment is written as the map side writes a block: where the serializer and codec read
  // blocks back to back (Spark's batch fetch), so do they segments.
  override def joinable: Boolean = true

  override def served(part: BundledPart, holder: BlockManagerId, reader: BlockManagerId): Unit = ()

  override def cut(bytes: ManagedBuffer): Option[BundledRead.Cut] = {
    val data = bytes.nioByteBuffer()
    val (segments, headerBytes) = Payloads.decodeHeader(data)
    if (headerBytes + segments.iterator.map(_.length).sum != bytes.size) return None
    val byKey = needed.iterator.collect { case b @ BlockRef(ShuffleBlockId(_, mapId, p), _, _) =>
      (mapId, p) -> b
    }.toMap
    val taken = mutable.HashSet.empty[(Long, Int)]
    var offset = headerBytes.toLong
    val parts = segments.flatMap { s =>
      val keys = s.mapIds.map(m => (m, s.partition))
      val at = offset
      offset += s.length
      // Each map output once (a segment naming one twice holds two attempts of its task).
      val usable = keys.nonEmpty && keys.distinct.length == keys.length &&
        keys.forall(k => byKey.contains(k) && !taken(k))
      if (!usable) None
      else if (!matches(data, at, s)) {
        counters.add(CombineCounters.CorruptSegments, 1)
        None
      } else {
        taken ++= keys
        val covered = keys.map(byKey).toIndexedSeq
        counters.add(CombineCounters.SegmentsRead, 1)
        counters.add(CombineCounters.RowsOut, s.rows)
        counters.add(CombineCounters.BytesOut, s.length)
        counters.add(CombineCounters.BlocksReplaced, covered.size)
        counters.add(CombineCounters.BytesReplaced, covered.iterator.map(_.size).sum)
        // Served as the block of its first map output: Spark's stream wrapper decompresses and
        // decrypts it as a shuffle block, and a failure while it is read names that map output.
        val first = covered.head
        Some(BundledPart(first.copy(size = s.length), home, at, s.length, covered))
      }
    }
    val fromFiles = needed.filter {
      case BlockRef(ShuffleBlockId(_, mapId, p), _, _) => !taken((mapId, p))
      case _ => true
    }
    counters.add(CombineCounters.BlocksFromFiles, fromFiles.size)
    Some(BundledRead.Cut(parts.toIndexedSeq, fromFiles.map(home -> _)))
  }

  private def matches(data: java.nio.ByteBuffer, at: Long, s: CombinedSegment): Boolean = {
    val crc = new CRC32C
    val from = data.position() + at.toInt
    crc.update(data.duplicate().position(from).limit(from + s.length.toInt))
    crc.getValue == s.checksum
  }
}
