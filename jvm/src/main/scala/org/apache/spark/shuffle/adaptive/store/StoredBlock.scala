package org.apache.spark.shuffle.adaptive.store

import java.nio.ByteBuffer

import io.netty.buffer.Unpooled

import org.apache.spark.network.buffer.{ManagedBuffer, NettyManagedBuffer, NioManagedBuffer}

/** A block's bytes in a store: direct buffers, in order (one when its size was known up front). */
private[spark] final class StoredBlock(chunks: IndexedSeq[ByteBuffer]) {

  val size: Long = chunks.iterator.map(_.remaining.toLong).sum

  /** A view for one reader: no copy, and nothing to release (the store owns the memory). */
  def buffer: ManagedBuffer =
    if (chunks.size == 1) new NioManagedBuffer(chunks.head.asReadOnlyBuffer())
    else new NettyManagedBuffer(Unpooled.wrappedBuffer(chunks.map(_.asReadOnlyBuffer()): _*))
}
