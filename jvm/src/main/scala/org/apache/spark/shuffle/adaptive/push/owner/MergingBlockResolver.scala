package org.apache.spark.shuffle.adaptive.push.owner

import java.io.IOException
import java.nio.ByteBuffer

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.serializer.SerializerManager
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage._
import org.apache.spark.shuffle.adaptive.protocol.{BlockMessage, OwnerTableUpdates, Payloads}
import org.apache.spark.shuffle.adaptive.transport.FilesBackedResolver

/**
 * The resolver of mode=push: serves the layouts and chunks of the partitions this executor
 * merged ([[BlockMessage]]s) from its [[MergeStore]], and everything else from the map-output
 * files through `files`; takes the runs other executors push here. Pushes ride Spark's block
 * upload (a run travels as the batch block of its reduce range), whose shuffle blocks reach
 * `putShuffleBlockAsStream` (so do chunks other owners hand off here, [[ChunkHandOff]], and the
 * owner tables the driver sends, [[OwnerTableUpdates]]), and
 * merged reads Spark's fetch protocol, so both are authenticated
 * and encrypted as Spark's block transfers are. The driver's question at a map stage's end goes
 * on to `mapStageEnded`.
 */
private[spark] final class MergingBlockResolver(
    conf: SparkConf,
    files: IndexShuffleBlockResolver,
    merges: MergeStore,
    tables: OwnerTableUpdates,
    mapStageEnded: Int => Unit)
    extends FilesBackedResolver(conf, files) {

  override def getBlockData(blockId: BlockId, dirs: Option[Array[String]]): ManagedBuffer =
    blockId match {
      case BlockMessage(request: BlockMessage.Request) => answer(request, blockId, dirs)
      case _ => files.getBlockData(blockId, dirs)
    }

  private def answer(
      request: BlockMessage.Request,
      blockId: BlockId,
      dirs: Option[Array[String]]): ManagedBuffer = request match {
    case LayoutRequest(shuffleId, start, end) =>
      new NioManagedBuffer(
        Payloads.encodeLayout(merges.layout(shuffleId, start, end, forPeer = true)))
    case ChunkRequest(shuffleId, _, chunkId) =>
      merges
        .chunk(shuffleId, chunkId)
        .getOrElse(throw new IOException(s"$request: no such merged chunk here"))
    case RangeRequest(shuffleId, start, end) =>
      merges
        .range(shuffleId, start, end)
        .getOrElse(throw new IOException(s"$request: partitions not sealed here"))
    case HostedChunkRequest(shuffleId, partition, chunkId) =>
      merges
        .hostedChunk(shuffleId, partition, chunkId)
        .getOrElse(throw new IOException(s"$request: no such handed-off chunk here"))
    case SummaryRequest(shuffleId, ended) =>
      if (ended) mapStageEnded(shuffleId)
      new NioManagedBuffer(Payloads.encodeSummary(merges.summary(shuffleId)))
    case RoomRequest =>
      new NioManagedBuffer(ByteBuffer.allocate(8).putLong(0, merges.roomForPeers))
    case _: CombinedReadRequest => files.getBlockData(blockId, dirs)
  }

  override def putShuffleBlockAsStream(
      blockId: BlockId,
      serializerManager: SerializerManager): StreamCallbackWithID = blockId match {
    case BlockMessage(HandOffUpload(shuffleId, partition, chunkId)) =>
      merges.receiveHandOff(shuffleId, partition, chunkId)
    case BlockMessage(TableUpload(shuffleId, _)) => tables.receive(blockId, shuffleId)
    case run: ShuffleBlockBatchId => merges.receiveRun(run)
    case _ => files.putShuffleBlockAsStream(blockId, serializerManager)
  }
}
