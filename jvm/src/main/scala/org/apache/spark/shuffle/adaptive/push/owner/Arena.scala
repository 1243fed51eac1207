package org.apache.spark.shuffle.adaptive.push.owner

import java.io.InputStream
import java.nio.ByteBuffer
import java.util.concurrent.atomic.{AtomicInteger, AtomicLong}

import io.netty.buffer.{ByteBufInputStream, Unpooled}

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.StorageUtils

/**
 * The direct memory of one chunk a store holds: `buffer`, as `ByteBuffer.allocateDirect` gave it.
 * It is freed as soon as neither its chunk nor any answer that serves it holds it. Left to the
 * GC, a chunk's memory outlived the chunk: the buffers of chunks that moved to disk or were read
 * had aged into the old generation, which a store's short-lived garbage rarely makes G1 collect,
 * and an 8 GiB shuffle's owners held 500-700 MiB of direct memory under a store of 205 MiB.
 *
 * The chunk holds it from the start; each [[view]] holds it until released (Spark's transport
 * releases an answer once sent, a reduce task the blocks it read). Views are taken under the
 * chunk's shuffle's lock, which the chunk also holds when it lets go, so no view is taken of
 * freed memory. A view never released leaves the buffer to the GC, as before.
 */
private[owner] final class Arena(val buffer: ByteBuffer, held: AtomicLong) {
  private[this] val holders = new AtomicInteger(1)
  held.addAndGet(buffer.capacity)

  /** A view of `bytes`, a part of `buffer`, that holds the memory until released. */
  def view(bytes: ByteBuffer): ManagedBuffer = {
    holders.incrementAndGet()
    new Arena.View(this, bytes.asReadOnlyBuffer())
  }

  /** One holder lets go; the last frees the memory. */
  def release(): Unit = if (holders.decrementAndGet() == 0) {
    held.addAndGet(-buffer.capacity)
    StorageUtils.dispose(buffer)
  }
}

private[owner] object Arena {

  /** A served part of an arena; Spark's retain and release count on it, the last lets go. */
  final class View(arena: Arena, bytes: ByteBuffer) extends ManagedBuffer {
    private[this] val references = new AtomicInteger(1)
    override def size(): Long = bytes.remaining
    override def nioByteBuffer(): ByteBuffer = bytes.duplicate()
    override def createInputStream(): InputStream =
      new ByteBufInputStream(Unpooled.wrappedBuffer(bytes.duplicate()))
    override def retain(): ManagedBuffer = { references.incrementAndGet(); this }
    // Released more often than retained (a caller's bug) it stays released: the arena lets go once.
    override def release(): ManagedBuffer = {
      if (references.decrementAndGet() == 0) arena.release()
      this
    }
    override def convertToNetty(): AnyRef = Unpooled.wrappedBuffer(bytes.duplicate())
    override def convertToNettyForSsl(): AnyRef = convertToNetty()
  }
}
