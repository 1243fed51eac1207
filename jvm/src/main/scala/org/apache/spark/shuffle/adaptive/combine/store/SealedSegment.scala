package org.apache.spark.shuffle.adaptive.combine.store

import java.nio.ByteBuffer

import org.apache.spark.shuffle.adaptive.memory.SpillFile
import org.apache.spark.shuffle.adaptive.combine.protocol.CombinedSegment

/** A sealed segment: its bytes in memory, or where on disk. */
private[combine] final class SealedSegment(val segment: CombinedSegment, chunks: Seq[ByteBuffer]) {
  private[this] var inMemoryBytes: Seq[ByteBuffer] = chunks
  private[this] var onDisk: Option[(SpillFile, Long)] = None

  def inMemory: Boolean = onDisk.isEmpty

  def inMemoryChunks: Seq[ByteBuffer] = inMemoryBytes

  def movedTo(file: SpillFile, offset: Long): Unit = {
    onDisk = Some((file, offset))
    inMemoryBytes = Nil
  }

  def bytes: Seq[ByteBuffer] = onDisk match {
    case Some((file, offset)) => Seq(file.segment(offset, segment.length).nioByteBuffer())
    case None => inMemoryBytes.map(_.duplicate())
  }
}
