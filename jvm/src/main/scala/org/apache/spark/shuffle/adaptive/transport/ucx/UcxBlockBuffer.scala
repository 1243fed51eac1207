package org.apache.spark.shuffle.adaptive.transport.ucx

import java.io.InputStream
import java.nio.ByteBuffer
import java.util.concurrent.atomic.AtomicInteger

import io.netty.buffer.Unpooled

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.util.io.ChunkedByteBuffer

/**
 * One block's bytes within a pooled buffer that a one-sided read filled. Holds one reference to
 * the pooled buffer while its own count is above zero.
 */
private[ucx] final class UcxBlockBuffer(pooled: UcxBufferPool.Pooled, offset: Int, length: Int)
    extends ManagedBuffer {

  pooled.retain()
  private[this] val refs = new AtomicInteger(1)

  override def size(): Long = length

  override def nioByteBuffer(): ByteBuffer = {
    val view = pooled.buffer.duplicate()
    view.limit(offset + length).position(offset)
    view.slice()
  }

  override def createInputStream(): InputStream =
    new ChunkedByteBuffer(nioByteBuffer()).toInputStream(dispose = false)

  override def retain(): ManagedBuffer = {
    val before = refs.getAndIncrement()
    require(before > 0, "retained a released block buffer")
    this
  }

  override def release(): ManagedBuffer = {
    val after = refs.decrementAndGet()
    require(after >= 0, "released a block buffer too often")
    if (after == 0) pooled.release()
    this
  }

  override def convertToNetty(): AnyRef = Unpooled.wrappedBuffer(nioByteBuffer())

  override def convertToNettyForSsl(): AnyRef = convertToNetty()

  override def toString: String = s"UcxBlockBuffer($length bytes)"
}
