package org.apache.spark.shuffle.adaptive.push.owner

import java.io.IOException
import java.nio.ByteBuffer

import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}
import org.apache.spark.shuffle.adaptive.protocol.MessageHandler
import org.apache.spark.shuffle.adaptive.push.protocol._

/**
 * What mode=push answers and takes of the plugin's messages on this executor: the layouts and
 * chunks of the partitions it merged, from its [[MergeStore]]; the runs other executors push here
 * ([[PushedRun]]), the chunks other owners hand off here ([[ChunkHandOff]]) and the owner tables
 * the driver sends ([[OwnerTableUpdates]]). The driver's question at a map stage's end goes on to
 * `mapStageEnded`.
 */
private[push] final class PushMessages(
    merges: MergeStore,
    tables: OwnerTableUpdates,
    mapStageEnded: Int => Unit)
    extends MessageHandler {

  override def kinds: Set[Int] = PushRequest.Kinds ++ PushUpload.Kinds

  override def answer(id: BlockId): ManagedBuffer = id match {
    case PushRequest(LayoutRequest(shuffleId, start, end)) =>
      new NioManagedBuffer(
        PushPayloads.encodeLayout(merges.serving.layout(shuffleId, start, end, forPeer = true)))
    case PushRequest(request @ ChunkRequest(shuffleId, _, chunkId)) =>
      merges.serving
        .chunk(shuffleId, chunkId)
        .getOrElse(throw new IOException(s"$request: no such merged chunk here"))
    case PushRequest(request @ RangeRequest(shuffleId, start, end)) =>
      merges.serving
        .range(shuffleId, start, end)
        .getOrElse(throw new IOException(s"$request: partitions not sealed here"))
    case PushRequest(request @ ChunkRunRequest(shuffleId, partition, first, until)) =>
      merges.serving
        .chunkRun(shuffleId, partition, first, until)
        .getOrElse(throw new IOException(s"$request: partition not sealed here, or chunks gone"))
    case PushRequest(request @ HostedChunkRequest(shuffleId, partition, chunkId)) =>
      merges.serving
        .hostedChunk(shuffleId, partition, chunkId)
        .getOrElse(throw new IOException(s"$request: no such handed-off chunk here"))
    case PushRequest(SummaryRequest(shuffleId, ended)) =>
      if (ended) mapStageEnded(shuffleId)
      new NioManagedBuffer(PushPayloads.encodeSummary(merges.serving.summary(shuffleId)))
    case PushRequest(SealedRequest(shuffleId, start, end)) =>
      new NioManagedBuffer(
        PushPayloads.encodeSealed(merges.serving.sealedOf(shuffleId, start, end)))
    case PushRequest(ReleaseRequest(shuffleId)) =>
      new NioManagedBuffer(ByteBuffer.allocate(8).putLong(0, merges.stageRead(shuffleId)))
    case PushRequest(RoomRequest) =>
      new NioManagedBuffer(ByteBuffer.allocate(8).putLong(0, merges.policy.roomForPeers))
    case _ => throw new IOException(s"$id: not a request of mode=push")
  }

  override def receive(id: BlockId): StreamCallbackWithID = id match {
    case PushUpload(HandOffUpload(shuffleId, partition, chunkId)) =>
      merges.handOffs.receive(shuffleId, partition, chunkId)
    case PushUpload(upload: TableUpload) => tables.receive(upload)
    case _ => throw new IOException(s"$id: not an upload of mode=push")
  }

  override def receiveRun(id: ShuffleBlockBatchId): Option[StreamCallbackWithID] =
    PushUpload.unapply(id).collect { case run: PushedRun => merges.intake.receiveRun(run) }
}
