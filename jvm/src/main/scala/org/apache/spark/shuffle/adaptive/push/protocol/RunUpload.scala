package org.apache.spark.shuffle.adaptive.push.protocol

import java.io.{ByteArrayInputStream, File, FileInputStream, InputStream, IOException, SequenceInputStream}
import java.nio.ByteBuffer
import java.nio.channels.{FileChannel, WritableByteChannel}
import java.nio.file.StandardOpenOption

import io.netty.handler.stream.ChunkedStream

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.util.{AbstractFileRegion, LimitedInputStream}
import org.apache.spark.storage.ShuffleBlockBatchId

/**
 * What a pusher uploads to a partition's owner: a run of its map output's blocks that lie next to
 * each other in the data file (an owner holds a contiguous range of partitions), as a header (the
 * number of reduce partitions the run spans, then each one's size, empty ones included) followed
 * by the file's bytes. The bytes go from the file to the socket without passing through the
 * heap; [[RunStream]] takes them.
 */
private[spark] final class RunUpload(sizes: Array[Long], file: File, offset: Long)
    extends ManagedBuffer {

  private[this] val header = RunUpload.header(sizes)
  private[this] val length = sizes.sum

  override def size(): Long = header.length + length

  override def nioByteBuffer(): ByteBuffer = {
    val all = ByteBuffer.allocate(Math.toIntExact(size())).put(header)
    RunUpload.readFully(file, offset, all)
    all.flip()
  }

  override def createInputStream(): InputStream = {
    val in = new FileInputStream(file)
    in.getChannel.position(offset)
    new SequenceInputStream(new ByteArrayInputStream(header), new LimitedInputStream(in, length))
  }

  override def retain(): ManagedBuffer = this

  override def release(): ManagedBuffer = this

  override def convertToNetty(): AnyRef = new RunUpload.Region(header, file, offset, length)

  override def convertToNettyForSsl(): AnyRef = new ChunkedStream(createInputStream(), 64 * 1024)
}

private[spark] object RunUpload {

  /** The run `run` of the map output in `dataFile` with index `offsets`. */
  def of(run: ShuffleBlockBatchId, dataFile: File, offsets: Array[Long]): RunUpload =
    new RunUpload(
      sizes(offsets, run.startReduceId, run.endReduceId),
      dataFile,
      offsets(run.startReduceId))

  /** The sizes of partitions `[start, end)` of a map output with index `offsets`. */
  def sizes(offsets: Array[Long], start: Int, end: Int): Array[Long] =
    (start until end).map(r => offsets(r + 1) - offsets(r)).toArray

  def headerLength(partitions: Int): Int = 4 + 8 * partitions

  def header(sizes: Array[Long]): Array[Byte] = {
    val out = ByteBuffer.allocate(headerLength(sizes.length)).putInt(sizes.length)
    sizes.foreach(out.putLong)
    out.array()
  }

  /** Fills the rest of `into` with `file`'s bytes from `offset`; fails if the file ends first. */
  def readFully(file: File, offset: Long, into: ByteBuffer): Unit = {
    val channel = FileChannel.open(file.toPath, StandardOpenOption.READ)
    try {
      val start = into.position()
      while (into.hasRemaining) {
        if (channel.read(into, offset + into.position() - start) < 0) {
          throw new IOException(s"$file ended before ${offset + into.limit() - start} bytes")
        }
      }
    } finally channel.close()
  }

  /** The sizes a complete header announces; it must span `partitions` reduce partitions. */
  def sizesOf(header: ByteBuffer, partitions: Int): Array[Long] = {
    val count = header.getInt
    if (count != partitions || header.remaining != 8 * count) {
      throw new IOException(s"a run header for $count partitions where $partitions were expected")
    }
    Array.fill(count)(header.getLong)
  }

  /** The header, then `length` bytes of `file` from `offset`, written as Netty asks. */
  private final class Region(header: Array[Byte], file: File, offset: Long, length: Long)
      extends AbstractFileRegion {

    private[this] var channel: FileChannel = _
    private[this] var sent = 0L

    override def position(): Long = 0

    override def count(): Long = header.length + length

    override def transferred(): Long = sent

    override def transferTo(target: WritableByteChannel, position: Long): Long = {
      val written =
        if (position < header.length) {
          target.write(ByteBuffer.wrap(header, position.toInt, header.length - position.toInt))
        } else {
          if (channel == null) channel = FileChannel.open(file.toPath, StandardOpenOption.READ)
          val done = position - header.length
          channel.transferTo(offset + done, length - done, target)
        }
      sent += written
      written
    }

    override def deallocate(): Unit = if (channel != null) channel.close()
  }
}
