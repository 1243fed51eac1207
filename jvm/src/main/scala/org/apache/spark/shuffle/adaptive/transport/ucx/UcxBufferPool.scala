package org.apache.spark.shuffle.adaptive.transport.ucx

import java.nio.ByteBuffer
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable

import org.openucx.jucx.UcxUtils
import org.openucx.jucx.ucp.UcpMemory

import org.apache.spark.storage.StorageUtils

/**
 * Registered direct buffers that one-sided reads land in, reused across tasks of this JVM.
 * Buffers come in power-of-two sizes from `minSize`; a released one is kept for reuse while the
 * idle ones add up to at most `maxIdleBytes`, else deregistered and freed. Buffers in use are
 * bounded by the fetchers' in-flight limits (one per request in flight), so the pool holds at
 * most those plus `maxIdleBytes`.
 */
private[ucx] final class UcxBufferPool(
    register: ByteBuffer => UcpMemory,
    deregister: UcpMemory => Unit,
    maxIdleBytes: Long,
    minSize: Int = 64 * 1024) {

  private[this] val idle = mutable.HashMap.empty[Int, List[UcxBufferPool.Pooled]]
  private[this] var idleBytes = 0L

  /** A buffer of at least `size` bytes (at most 2 GiB - 1), its one reference the caller's. */
  def acquire(size: Int): UcxBufferPool.Pooled = {
    val capacity = UcxBufferPool.sizeClass(size, minSize)
    val reused = synchronized {
      idle.get(capacity) match {
        case Some(head :: rest) =>
          idle(capacity) = rest
          idleBytes -= capacity
          Some(head)
        case _ => None
      }
    }
    val pooled = reused.getOrElse {
      val buffer = ByteBuffer.allocateDirect(capacity)
      new UcxBufferPool.Pooled(this, buffer, register(buffer))
    }
    pooled.reuse()
    pooled
  }

  private def recycle(pooled: UcxBufferPool.Pooled): Unit = {
    val capacity = pooled.buffer.capacity
    val kept = synchronized {
      val keep = idleBytes + capacity <= maxIdleBytes
      if (keep) {
        idle(capacity) = pooled :: idle.getOrElse(capacity, Nil)
        idleBytes += capacity
      }
      keep
    }
    if (!kept) free(pooled)
  }

  private def free(pooled: UcxBufferPool.Pooled): Unit = {
    deregister(pooled.memory)
    StorageUtils.dispose(pooled.buffer)
  }

  /** Frees every idle buffer; buffers in use are freed as they are released. */
  def close(): Unit = {
    val all = synchronized {
      val buffers = idle.values.flatten.toList
      idle.clear()
      idleBytes = 0
      buffers
    }
    all.foreach(free)
  }
}

private[ucx] object UcxBufferPool {

  /** The smallest power of two that holds `size`, at least `minSize`. */
  def sizeClass(size: Int, minSize: Int): Int = {
    require(size >= 0, s"negative buffer size $size")
    val wanted = math.max(size, minSize)
    val highest = Integer.highestOneBit(wanted)
    if (highest == wanted) wanted
    else if (highest == (1 << 30)) Int.MaxValue - 8 // the largest array the JVM allows
    else highest << 1
  }

  /** A pooled buffer, counting references; the last release returns it to its pool. */
  final class Pooled private[UcxBufferPool] (
      pool: UcxBufferPool,
      val buffer: ByteBuffer,
      val memory: UcpMemory) {
    private[this] val refs = new AtomicInteger

    def address: Long = UcxUtils.getAddress(buffer)

    private[UcxBufferPool] def reuse(): Unit = refs.set(1)

    def retain(): Unit = {
      val before = refs.getAndIncrement()
      require(before > 0, "retained a released UCX buffer")
    }

    def release(): Unit = {
      val after = refs.decrementAndGet()
      require(after >= 0, "released a UCX buffer too often")
      if (after == 0) pool.recycle(this)
    }
  }
}
