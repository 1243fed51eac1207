package org.apache.spark.shuffle.adaptive.memory

import java.io.File
import java.nio.ByteBuffer
import java.nio.channels.FileChannel
import java.nio.file.StandardOpenOption.{CREATE, WRITE}

import org.apache.spark.network.buffer.{FileSegmentManagedBuffer, ManagedBuffer}
import org.apache.spark.network.util.TransportConf

/**
 * The chunks of one shuffle that an owner moved out of memory, back to back in one file of its
 * local dirs (Magnet's merged files, a chunk at a time): each chunk is written once, in one
 * sequential write, and served as a segment of the file. Callers serialize appends.
 */
private[spark] final class SpillFile(file: File, transport: TransportConf) {
  private[this] val channel = FileChannel.open(file.toPath, CREATE, WRITE)
  private[this] var end = 0L

  /** Writes `slices` back to back and answers where they start; nothing is kept if it fails. */
  def append(slices: Seq[ByteBuffer]): Long = {
    val start = end
    try {
      slices.foreach { slice =>
        val bytes = slice.duplicate()
        while (bytes.hasRemaining) end += channel.write(bytes, end)
      }
    } catch {
      case e: Throwable =>
        end = start
        throw e
    }
    start
  }

  def segment(offset: Long, length: Long): ManagedBuffer =
    new FileSegmentManagedBuffer(transport, file, offset, length)

  def delete(): Unit = {
    channel.close()
    file.delete()
  }
}
