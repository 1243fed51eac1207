package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.transport.BlockRef

/** What the transport hands back to the task thread for one requested block. */
private[spark] sealed trait FetchResult {
  def block: BlockRef
  def address: BlockManagerId

  /** True for the last block of its request. */
  def requestDone: Boolean
}

private[spark] object FetchResult {

  /**
   * @param via the transport path that served it (see [[transport.TransportListener]])
   * @param requestDone true for the last block of its request
   * @param requestMillis the request's round trip, set when `requestDone`
   */
  final case class Fetched(
      block: BlockRef,
      address: BlockManagerId,
      buf: ManagedBuffer,
      via: String,
      requestDone: Boolean,
      requestMillis: Long)
      extends FetchResult

  /** Refused for want of direct memory; asked for again once the back-off lifts. */
  final case class Deferred(block: BlockRef, address: BlockManagerId, requestDone: Boolean)
      extends FetchResult

  final case class Failed(
      block: BlockRef,
      address: BlockManagerId,
      requestDone: Boolean,
      cause: Throwable)
      extends FetchResult
}
