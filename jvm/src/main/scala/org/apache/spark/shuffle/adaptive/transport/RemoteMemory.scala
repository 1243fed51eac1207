package org.apache.spark.shuffle.adaptive.transport

import java.nio.ByteBuffer

/**
 * `length` bytes of an executor's memory that peers read one-sided: where they lie in that
 * executor and the packed remote key a peer unpacks to read them.
 */
private[spark] final case class RemoteRegion(address: Long, rkey: Array[Byte], length: Long)

/** A buffer peers may read one-sided until [[release]]. */
private[spark] final class ExposedBuffer(val region: RemoteRegion, release: () => Unit) {
  def close(): Unit = release()
}

/** Lets peers read buffers of this executor one-sided, as [[transport.ucx]] does. */
private[spark] trait RemoteMemory {

  /** Registers `buffer` (direct; its bytes from position to limit); throws if it cannot. */
  def expose(buffer: ByteBuffer): ExposedBuffer
}
