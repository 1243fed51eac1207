package org.apache.spark.shuffle.adaptive.push.protocol

import java.io.ByteArrayOutputStream
import java.nio.ByteBuffer
import java.nio.channels.{Channels, WritableByteChannel}
import java.nio.file.Files

import io.netty.buffer.ByteBufAllocator
import io.netty.channel.FileRegion
import io.netty.handler.stream.ChunkedStream
import org.scalatest.funsuite.AnyFunSuite

class RunUploadSuite extends AnyFunSuite {
  private val data = Array.tabulate[Byte](500)(i => (i * 7).toByte)

  private def withUpload(sizes: Array[Long], offset: Long)(f: (RunUpload, Array[Byte]) => Unit) = {
    val file = Files.createTempFile("run", ".data").toFile
    try {
      Files.write(file.toPath, data)
      val expected = RunUpload.header(sizes) ++ data.slice(offset.toInt, (offset + sizes.sum).toInt)
      f(new RunUpload(sizes, file, offset), expected)
    } finally file.delete()
  }

  /** A channel that takes at most `max` bytes per write, as a busy socket does. */
  private final class Trickle(out: ByteArrayOutputStream, max: Int) extends WritableByteChannel {
    private val sink = Channels.newChannel(out)
    override def write(src: ByteBuffer): Int = {
      val part = src.duplicate()
      part.limit(part.position() + math.min(max, part.remaining))
      val n = sink.write(part)
      src.position(src.position() + n)
      n
    }
    override def isOpen: Boolean = true
    override def close(): Unit = ()
  }

  test("every view of the upload is the header, then the run's bytes of the file") {
    withUpload(Array(10L, 0L, 90L, 3L), offset = 100) { (upload, expected) =>
      assert(upload.size() === expected.length)
      val in = upload.createInputStream()
      assert(
        (try in.readAllBytes()
        finally in.close()) === expected)
      val nio = upload.nioByteBuffer()
      assert(Array.tabulate(nio.remaining)(nio.get) === expected)
    }
  }

  test("Netty's file region writes the same bytes, whatever each write takes") {
    Seq(1, 5, 64, 4096).foreach { max =>
      withUpload(Array(10L, 0L, 90L, 3L), offset = 100) { (upload, expected) =>
        val region = upload.convertToNetty().asInstanceOf[FileRegion]
        val out = new ByteArrayOutputStream
        val channel = new Trickle(out, max)
        while (region.transferred() < region.count())
          region.transferTo(channel, region.transferred())
        region.release()
        assert(out.toByteArray === expected)
      }
    }
  }

  test("the SSL path streams the same bytes") {
    withUpload(Array(7L, 400L), offset = 50) { (upload, expected) =>
      val stream = upload.convertToNettyForSsl().asInstanceOf[ChunkedStream]
      val out = new ByteArrayOutputStream
      while (!stream.isEndOfInput) {
        val chunk = stream.readChunk(ByteBufAllocator.DEFAULT)
        if (chunk != null) {
          val bytes = new Array[Byte](chunk.readableBytes)
          chunk.readBytes(bytes)
          chunk.release()
          out.write(bytes)
        }
      }
      stream.close()
      assert(out.toByteArray === expected)
    }
  }

  test("a header gives back its sizes, and refuses another number of partitions") {
    val header = ByteBuffer.wrap(RunUpload.header(Array(1L, 0L, 5L)))
    assert(RunUpload.sizesOf(header.duplicate(), 3) === Array(1L, 0L, 5L))
    intercept[java.io.IOException](RunUpload.sizesOf(header.duplicate(), 2))
  }
}
