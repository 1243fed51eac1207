package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.network.buffer.ManagedBuffer

/**
 * What a [[BlockTransport]] reports for each requested block, exactly once per block, from any
 * thread.
 */
private[spark] trait TransportListener {

  /**
   * The block's data; the listener retains the buffer if it keeps it past this call. `via` names
   * the path that served it, which differs from the transport asked when that one fell back.
   */
  def onFetched(blockId: String, buf: ManagedBuffer, via: String): Unit

  def onFailed(blockId: String, cause: Throwable): Unit

  /** The block could not be read host-locally and goes over the network instead. */
  def onFellBack(blockId: String, cause: Throwable): Unit
}
