package org.apache.spark.shuffle.adaptive.protocol

import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}

/**
 * What one feature answers of the plugin's messages ([[BlockMessage]]): the kinds of message it
 * spells, which no other feature's handler may spell; the requests of those kinds it serves
 * (fetched: the answer is a block's bytes) and the uploads it takes (streamed), each read from
 * its id by the feature's own spelling.
 */
private[spark] trait MessageHandler {

  /** The message kinds this feature numbers. */
  def kinds: Set[Int]

  /** The answer to a request of one of [[kinds]]. */
  def answer(id: BlockId): ManagedBuffer

  /** What takes an upload of one of [[kinds]]. */
  def receive(id: BlockId): StreamCallbackWithID

  /**
   * What takes an upload spelled as blocks `[start, end)` of a map output, none where this
   * feature takes no such uploads.
   */
  def receiveRun(id: ShuffleBlockBatchId): Option[StreamCallbackWithID] = None
}
