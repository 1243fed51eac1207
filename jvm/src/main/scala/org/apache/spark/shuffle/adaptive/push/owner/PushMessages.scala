package org.apache.spark.shuffle.adaptive.push.owner

import java.io.IOException
import java.nio.ByteBuffer

import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage._
import org.apache.spark.shuffle.adaptive.protocol.{MessageHandler, OwnerTableUpdates, Payloads}

/**
 * What mode=push answers and takes of the plugin's messages on this executor: the layouts and
 * chunks of the partitions it merged, from its [[MergeStore]]; the runs other executors push here
 * ([[PushedRun]]), the chunks other owners hand off here ([[ChunkHandOff]]) and the owner tables
 * the driver sends ([[OwnerTableUpdates]]). The driver's question at a map stage's end goes on to
 * `mapStageEnded`.
 */
private[spark] final class PushMessages(
    merges: MergeStore,
    tables: OwnerTableUpdates,
    mapStageEnded: Int => Unit)
    extends MessageHandler {

  override val answer: PartialFunction[Request, ManagedBuffer] = {
    case LayoutRequest(shuffleId, start, end) =>
      new NioManagedBuffer(
        Payloads.encodeLayout(merges.serving.layout(shuffleId, start, end, forPeer = true)))
    case request @ ChunkRequest(shuffleId, _, chunkId) =>
      merges.serving
        .chunk(shuffleId, chunkId)
        .getOrElse(throw new IOException(s"$request: no such merged chunk here"))
    case request @ RangeRequest(shuffleId, start, end) =>
      merges.serving
        .range(shuffleId, start, end)
        .getOrElse(throw new IOException(s"$request: partitions not sealed here"))
    case request @ HostedChunkRequest(shuffleId, partition, chunkId) =>
      merges.serving
        .hostedChunk(shuffleId, partition, chunkId)
        .getOrElse(throw new IOException(s"$request: no such handed-off chunk here"))
    case SummaryRequest(shuffleId, ended) =>
      if (ended) mapStageEnded(shuffleId)
      new NioManagedBuffer(Payloads.encodeSummary(merges.serving.summary(shuffleId)))
    case RoomRequest =>
      new NioManagedBuffer(ByteBuffer.allocate(8).putLong(0, merges.policy.roomForPeers))
  }

  override val receive: PartialFunction[Upload, StreamCallbackWithID] = {
    case run: PushedRun => merges.intake.receiveRun(run)
    case HandOffUpload(shuffleId, partition, chunkId) =>
      merges.handOffs.receive(shuffleId, partition, chunkId)
    case upload @ TableUpload(shuffleId, _) => tables.receive(upload.blockId, shuffleId)
  }
}
