package org.apache.spark.shuffle.adaptive.transport.ucx

import java.nio.ByteBuffer
import org.apache.spark.shuffle.adaptive.transport.{ExposedBuffer, RemoteMemory, RemoteRegion}

/** Buffers registered with this executor's UCX node, which peers read with their remote key. */
private[ucx] final class UcxRemoteMemory(node: UcxNode) extends RemoteMemory {

  override def expose(buffer: ByteBuffer): ExposedBuffer = {
    val view = buffer.slice()
    val memory = node.register(view)
    new ExposedBuffer(
      RemoteRegion(memory.getAddress, node.remoteKey(memory), view.remaining),
      () => node.deregister(memory))
  }
}
