package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.BlockId

/**
 * What a [[BlockTransport]] reports for each requested block, exactly once per block, from any
 * thread.
 */
private[spark] trait TransportListener {

  /**
   * The block's data; the listener retains the buffer if it keeps it past this call. `via` names
   * the path that served it, which differs from the transport asked when that one fell back.
   */
  def onFetched(blockId: BlockId, buf: ManagedBuffer, via: String): Unit

  def onFailed(blockId: BlockId, cause: Throwable): Unit

  /** The block cannot be read the way its transport reads and goes to the next one instead. */
  def onFellBack(blockId: BlockId, cause: Throwable): Unit
}
