package org.apache.spark.shuffle.adaptive.push.owner

import java.io.{InputStream, IOException, SequenceInputStream}
import java.nio.ByteBuffer
import java.nio.channels.{FileChannel, WritableByteChannel}
import java.nio.file.StandardOpenOption.READ

import scala.jdk.CollectionConverters._

import io.netty.buffer.Unpooled
import io.netty.handler.stream.ChunkedStream

import org.apache.spark.network.buffer.{FileSegmentManagedBuffer, ManagedBuffer}
import org.apache.spark.network.util.AbstractFileRegion

/**
 * One answer of an owner made of several parts back to back: chunks in memory ([[Arena]] views)
 * and segments of the spill file, as a run of chunks or a range of partitions is served, or a
 * header and a chunk, as a chunk is handed off. Sent, its file segments go from the page cache
 * to the socket: neither mapped (a mapping of a segment of 2 MiB or more, Spark's
 * `FileSegmentManagedBuffer.nioByteBuffer`, stays in the executor's RSS until a GC finds it) nor
 * copied into the heap. Released, it releases every part.
 *
 * @param sslChunkSize the pieces it is sent in where TLS encrypts Spark's transport
 */
private[owner] final class ServedParts(parts: Seq[ManagedBuffer], sslChunkSize: Int)
    extends ManagedBuffer {

  override def size(): Long = parts.iterator.map(_.size).sum

  /**
   * For a reader on this executor, which reads it whole: a part in memory as it is, else a copy
   * in one buffer of the heap. Segments of files are read as streams: mapped (Spark's
   * `FileSegmentManagedBuffer.nioByteBuffer` from 2 MiB) they would stay in the executor's RSS
   * until a GC, and a channel's read into the heap goes through a direct buffer the JDK keeps for
   * the thread, as large as the largest read.
   */
  override def nioByteBuffer(): ByteBuffer = parts match {
    case Seq(inMemory) if !inMemory.isInstanceOf[FileSegmentManagedBuffer] =>
      inMemory.nioByteBuffer()
    case _ =>
      val all = ByteBuffer.allocate(math.toIntExact(size()))
      parts.foreach {
        case file: FileSegmentManagedBuffer =>
          val in = file.createInputStream()
          try {
            val read = in.readNBytes(all.array(), all.position(), file.getLength.toInt)
            if (read < file.getLength) throw new IOException(s"$file ended early")
            all.position(all.position() + read)
          } finally in.close()
        case part => all.put(part.nioByteBuffer())
      }
      all.flip()
  }

  override def createInputStream(): InputStream =
    new SequenceInputStream(parts.iterator.map(_.createInputStream()).asJavaEnumeration)

  override def retain(): ManagedBuffer = { parts.foreach(_.retain()); this }

  override def release(): ManagedBuffer = { parts.foreach(_.release()); this }

  override def convertToNetty(): AnyRef =
    if (parts.exists(_.isInstanceOf[FileSegmentManagedBuffer])) new ServedParts.Region(parts)
    else Unpooled.wrappedBuffer(parts.map(_.nioByteBuffer()): _*)

  override def convertToNettyForSsl(): AnyRef = new ChunkedStream(createInputStream(), sslChunkSize)
}

private[owner] object ServedParts {

  /**
   * The parts as one region Netty writes to a socket: bytes in memory written as they are, file
   * segments transferred from their file (`FileChannel.transferTo`: sendfile where the target is
   * a socket). Each call writes what the target takes of one part.
   */
  final class Region(parts: Seq[ManagedBuffer]) extends AbstractFileRegion {
    private[this] val lengths = parts.map(_.size).toArray
    private[this] val total = lengths.sum
    private[this] var written = 0L
    private[this] var channels = Map.empty[java.io.File, FileChannel]

    override def position(): Long = 0L
    override def transferred(): Long = written
    override def count(): Long = total

    override def transferTo(target: WritableByteChannel, position: Long): Long = {
      require(position == written, s"asked to write from $position, $written written")
      var part = 0
      var start = 0L
      while (part < lengths.length && start + lengths(part) <= position) {
        start += lengths(part)
        part += 1
      }
      if (part == lengths.length) return 0L
      val within = position - start
      val n = parts(part) match {
        case file: FileSegmentManagedBuffer =>
          channelOf(file.getFile)
            .transferTo(file.getOffset + within, lengths(part) - within, target)
        case inMemory =>
          val bytes = inMemory.nioByteBuffer()
          target.write(bytes.position(bytes.position() + within.toInt)).toLong
      }
      written += n
      n
    }

    private def channelOf(file: java.io.File): FileChannel =
      channels.getOrElse(
        file, {
          val channel = FileChannel.open(file.toPath, READ)
          channels += file -> channel
          channel
        })

    override protected def deallocate(): Unit = channels.values.foreach(_.close())
  }
}
