package org.apache.spark.shuffle.adaptive.store

import java.nio.ByteBuffer

import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}

/** A block's bytes in a store: a direct buffer of its own, or a slice of its run's. */
private[spark] final class StoredBlock(bytes: ByteBuffer) {

  def size: Long = bytes.remaining

  /** A view for one reader: no copy, and nothing to release (the store owns the memory). */
  def buffer: ManagedBuffer = new NioManagedBuffer(bytes.asReadOnlyBuffer())
}
