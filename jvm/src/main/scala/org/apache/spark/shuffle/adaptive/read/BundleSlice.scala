package org.apache.spark.shuffle.adaptive.read

import java.io.InputStream
import java.nio.ByteBuffer

import io.netty.buffer.{ByteBufInputStream, Unpooled}

import org.apache.spark.network.buffer.ManagedBuffer

/** A view of part of a fetched bundle's bytes; it holds a reference to the bundle's buffer. */
private[read] final class BundleSlice private (bytes: ByteBuffer, chunk: ManagedBuffer)
    extends ManagedBuffer {
  override def size(): Long = bytes.remaining
  override def nioByteBuffer(): ByteBuffer = bytes.duplicate()
  override def createInputStream(): InputStream =
    new ByteBufInputStream(Unpooled.wrappedBuffer(bytes.duplicate()))
  override def retain(): ManagedBuffer = { chunk.retain(); this }
  override def release(): ManagedBuffer = { chunk.release(); this }
  override def convertToNetty(): AnyRef = Unpooled.wrappedBuffer(bytes.duplicate())
  override def convertToNettyForSsl(): AnyRef = convertToNetty()
}

private[read] object BundleSlice {

  /**
   * One buffer of all the parts of `chunk`, back to back: a view where they lie next to each
   * other in the chunk (the usual case: the task needs every block), else a copy of them.
   */
  def joined(chunk: ManagedBuffer, parts: Seq[BundledPart]): ManagedBuffer = {
    val adjacent = parts.iterator.sliding(2).forall {
      case Seq(a, b) => a.offset + a.length == b.offset
      case _ => true
    }
    val bytes = chunk.nioByteBuffer()
    val start = bytes.position() + parts.head.offset.toInt
    val length = parts.iterator.map(_.length).sum.toInt
    chunk.retain()
    if (adjacent)
      new BundleSlice(bytes.duplicate().position(start).limit(start + length).slice(), chunk)
    else {
      val copy = ByteBuffer.allocate(length)
      parts.foreach { p =>
        val from = bytes.position() + p.offset.toInt
        copy.put(bytes.duplicate().position(from).limit(from + p.length.toInt))
      }
      new BundleSlice(copy.flip(), chunk)
    }
  }

  /** A buffer for each part of `chunk`, each holding its own reference to it. */
  def parts(chunk: ManagedBuffer, parts: Seq[BundledPart]): Seq[ManagedBuffer] = {
    // A chunk a fetch streamed to a file is read (or mapped) once, as a whole.
    val bytes = chunk.nioByteBuffer()
    parts.map { p =>
      chunk.retain()
      val start = bytes.position() + p.offset.toInt
      new BundleSlice(
        bytes.duplicate().position(start).limit(start + p.length.toInt).slice(),
        chunk)
    }
  }
}
