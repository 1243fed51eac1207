package org.apache.spark.shuffle.adaptive.combine.reduce

import java.util.zip.CRC32C

import scala.annotation.tailrec
import scala.collection.mutable

import org.apache.spark.internal.Logging
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.fetch.BlockRef
import org.apache.spark.shuffle.adaptive.metrics.CombineCounters
import org.apache.spark.shuffle.adaptive.combine.protocol.{CombinedPayload, CombinedReadRequest, CombinedSegment}
import org.apache.spark.shuffle.adaptive.read.{BundledPart, BundledRead}

/**
 * A reduce task's read of what executor `home` combined of its partitions `[start, end)`, besides
 * the blocks of `home`'s map outputs' files (which hold what those map outputs did not fold).
 * A record is in one place only: a file, or one segment (a map output whose fold found no room
 * part way is in two segments of a partition, each with its own records).
 * `kept` are the map outputs at `home` the task reads (map id to map index, as Spark's map
 * statuses have them, empty blocks included). Each segment is read exactly when it holds only
 * map outputs of `kept`: a segment that holds none of them holds map outputs Spark no longer keeps
 * (tasks that ran again write their files whole), and one that holds some of them with others
 * (a map output the task does not read, an attempt Spark did not keep), one that is corrupt, a
 * map output of `kept` whose folded rows `home` lost, an answer that is not what was asked for,
 * or a read that cannot be fetched, fail the task with a fetch failure naming `home`: the
 * segments are the only copy of what was folded, so Spark runs `home`'s map tasks again (their
 * new attempts write whole files, and are in no segment).
 *
 * @param size what the answer is planned as, for the fetch's flow control
 */
private[spark] final class CombinedRead(
    shuffleId: Int,
    start: Int,
    end: Int,
    home: BlockManagerId,
    kept: Map[Long, Int],
    val size: Long,
    counters: CombineCounters)
    extends BundledRead
    with Logging {

  override val id: BlockId = CombinedReadRequest(shuffleId, start, end).blockId

  // Which blocks its segments hold is known once it arrives: it is one block fetched.
  override def blocks: Int = 1

  // The files of `home`'s map outputs hold the rest of their rows: all are read besides.
  override def replacesBlocks: Boolean = false

  override def instead(why: String, cause: Option[Throwable]): Seq[(BlockManagerId, BlockRef)] =
    throw failure(why, cause.orNull)

  private def failure(why: String, cause: Throwable = null): Throwable = {
    val (mapId, mapIndex) = kept.minBy(_._2)
    SparkCompat.fetchFailed(
      home,
      shuffleId,
      mapId,
      mapIndex,
      start,
      s"$why: combined records of partitions [$start, $end) at $home, ${CombineCounters.OnlyCopy}",
      cause)
  }

  // Each segment is written as the map side writes a block: where the serializer and codec read
  // blocks back to back (Spark's batch fetch), so do they segments.
  override def joinable: Boolean = true

  override def name(holder: BlockManagerId): String = s"Combined records from $holder"

  override def served(part: BundledPart, holder: BlockManagerId, reader: BlockManagerId): Unit = ()

  override def cut(bytes: ManagedBuffer): Either[String, BundledRead.Cut] = {
    val data = bytes.nioByteBuffer()
    val (answer, headerBytes) = CombinedPayload.decode(data)
    var offset = headerBytes.toLong
    val parts = mutable.ArrayBuffer.empty[BundledPart]
    @tailrec def check(segments: List[CombinedSegment]): Option[String] = segments match {
      case Nil => None
      case s :: rest =>
        val at = offset
        offset += s.length
        val needed = s.mapIds.count(kept.contains)
        if (needed == 0) {
          counters.add(CombineCounters.StaleSegments, 1)
          check(rest)
        } else if (needed < s.mapIds.length) {
          Some(
            s"a segment of partition ${s.partition} holds map outputs the task reads " +
              s"(${s.mapIds.filter(kept.contains).mkString(", ")}) with others it must not " +
              s"(${s.mapIds.filterNot(kept.contains).mkString(", ")})")
        } else if (!matches(data, at, s)) {
          Some(s"a segment of partition ${s.partition} is corrupt (its checksum differs)")
        } else {
          // Served as a block of its first map output: Spark's stream wrapper decompresses and
          // decrypts it as a shuffle block, and a failure while it is read names that map output.
          val first = s.mapIds.min
          val block =
            BlockRef(ShuffleBlockId(shuffleId, first, s.partition), s.length, kept(first))
          parts += BundledPart(block, home, at, s.length, IndexedSeq.empty)
          check(rest)
        }
    }
    val lost = answer.lost.iterator.flatMap { case (p, ids) => ids.find(kept.contains).map(p -> _) }
    val problem =
      if (headerBytes + answer.segments.iterator.map(_.length).sum != bytes.size)
        Some(s"its header says ${answer.segments.size} segments of other lengths")
      else if (!answer.known) Some(s"$home no longer holds the shuffle's combined records")
      else if (lost.hasNext) {
        val (p, mapId) = lost.next()
        Some(s"$home lost what map output $mapId folded into partition $p")
      } else check(answer.segments.toList)
    problem.toLeft {
      parts.foreach { part =>
        counters.add(CombineCounters.SegmentsRead, 1)
        counters.add(CombineCounters.BytesOut, part.length)
      }
      counters.add(
        CombineCounters.RowsOut,
        answer.segments.iterator.filter(_.mapIds.exists(kept.contains)).map(_.rows).sum)
      BundledRead.Cut(parts.toIndexedSeq)
    }
  }

  private def matches(data: java.nio.ByteBuffer, at: Long, s: CombinedSegment): Boolean = {
    val crc = new CRC32C
    val from = data.position() + at.toInt
    crc.update(data.duplicate().position(from).limit(from + s.length.toInt))
    crc.getValue == s.checksum
  }
}
