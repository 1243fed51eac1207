package org.apache.spark.shuffle.adaptive.fetch

import java.io.{IOException, InputStream}

import org.apache.spark.network.buffer.ManagedBuffer

/**
 * The stream a reduce task reads one block through. It owns the block's buffer and releases it
 * exactly once, on close; a read error is handed to `onReadError`, which returns what to throw
 * (a FetchFailedException for a corrupt block, so that Spark reruns the map stage).
 */
private[fetch] final class BlockInputStream(
    delegate: InputStream,
    buf: ManagedBuffer,
    onReadError: IOException => Throwable,
    onClose: BlockInputStream => Unit)
    extends InputStream {

  private[this] var closed = false

  private def guarded[T](read: => T): T =
    try read
    catch {
      case e: IOException =>
        val failure = onReadError(e)
        close()
        throw failure
    }

  override def read(): Int = guarded(delegate.read())
  override def read(b: Array[Byte]): Int = guarded(delegate.read(b))
  override def read(b: Array[Byte], off: Int, len: Int): Int = guarded(delegate.read(b, off, len))
  override def skip(n: Long): Long = guarded(delegate.skip(n))
  override def available(): Int = guarded(delegate.available())
  override def markSupported(): Boolean = false

  override def close(): Unit = if (!closed) {
    closed = true
    try delegate.close()
    finally {
      buf.release()
      onClose(this)
    }
  }
}
