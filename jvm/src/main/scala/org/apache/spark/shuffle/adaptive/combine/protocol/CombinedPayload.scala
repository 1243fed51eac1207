package org.apache.spark.shuffle.adaptive.combine.protocol

import java.io.{ByteArrayOutputStream, DataInputStream, DataOutputStream, InputStream}
import java.nio.ByteBuffer

import scala.collection.mutable

import org.roaringbitmap.longlong.Roaring64NavigableMap

/** The payload of local reduction's one message: the answer to a [[CombinedReadRequest]]. */
private[spark] object CombinedPayload {

  /**
   * A combined read's answer ([[CombinedAnswer]]): whether the shuffle is known; the distinct
   * sets of map ids it names, each a serialized bitmap (a segment per partition of the same map
   * outputs names one set); per partition with lost map outputs, its set; per segment its
   * partition, rows, length, checksum and set. The segments' bytes follow.
   */
  def encode(answer: CombinedAnswer): ByteBuffer = {
    val sets = mutable.LinkedHashMap.empty[Seq[Long], Int]
    def setOf(ids: Array[Long]): Int = sets.getOrElseUpdate(ids.toSeq.sorted, sets.size)
    val lost = answer.lost.map { case (p, ids) => p -> setOf(ids) }
    val segments = answer.segments.map(s => s -> setOf(s.mapIds))
    val bytes = new ByteArrayOutputStream
    val out = new DataOutputStream(bytes)
    out.writeBoolean(answer.known)
    out.writeInt(sets.size)
    sets.keys.foreach { ids =>
      val bitmap = new Roaring64NavigableMap
      ids.foreach(bitmap.addLong)
      bitmap.runOptimize()
      bitmap.serialize(out)
    }
    out.writeInt(lost.size)
    lost.foreach { case (p, set) => out.writeInt(p); out.writeInt(set) }
    out.writeInt(segments.size)
    segments.foreach { case (s, set) =>
      out.writeInt(s.partition)
      out.writeLong(s.rows)
      out.writeLong(s.length)
      out.writeLong(s.checksum)
      out.writeInt(set)
    }
    out.close()
    ByteBuffer.wrap(bytes.toByteArray)
  }

  /** The answer, and where its segments' bytes start in `in`. */
  def decode(in: ByteBuffer): (CombinedAnswer, Int) = {
    val buf = in.duplicate()
    val data = new DataInputStream(new InputStream {
      override def read(): Int = if (buf.hasRemaining) buf.get() & 0xff else -1
    })
    val known = data.readBoolean()
    val sets = Vector.fill(data.readInt()) {
      val bitmap = new Roaring64NavigableMap
      bitmap.deserialize(data)
      bitmap.toArray
    }
    val lost = Vector.fill(data.readInt())(data.readInt() -> sets(data.readInt()))
    val segments = Vector.fill(data.readInt()) {
      val partition = data.readInt()
      val rows = data.readLong()
      val length = data.readLong()
      val checksum = data.readLong()
      CombinedSegment(partition, rows, length, checksum, sets(data.readInt()))
    }
    (CombinedAnswer(known, lost, segments), buf.position() - in.position())
  }
}
