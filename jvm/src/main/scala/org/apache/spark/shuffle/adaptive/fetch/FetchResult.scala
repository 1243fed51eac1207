package org.apache.spark.shuffle.adaptive.fetch

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.storage.BlockManagerId

/** What the transport hands back to the task thread for one requested item. */
private[fetch] sealed trait FetchResult {
  def item: FetchItem
  def address: BlockManagerId

  /** True for the last item of its request. */
  def requestDone: Boolean
}

private[fetch] object FetchResult {

  /**
   * @param via the transport path that served it (see [[transport.TransportListener]])
   * @param requestDone true for the last item of its request
   * @param requestMillis the request's round trip, set when `requestDone`
   */
  final case class Fetched(
      item: FetchItem,
      address: BlockManagerId,
      buf: ManagedBuffer,
      via: String,
      requestDone: Boolean,
      requestMillis: Long)
      extends FetchResult

  /** Refused for want of direct memory; asked for again once the back-off lifts. */
  final case class Deferred(item: FetchItem, address: BlockManagerId, requestDone: Boolean)
      extends FetchResult

  final case class Failed(
      item: FetchItem,
      address: BlockManagerId,
      requestDone: Boolean,
      cause: Throwable)
      extends FetchResult
}
