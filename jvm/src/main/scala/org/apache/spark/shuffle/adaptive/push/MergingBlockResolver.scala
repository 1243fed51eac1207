package org.apache.spark.shuffle.adaptive.push

import java.io.IOException
import java.nio.ByteBuffer

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.{ManagedBuffer, NioManagedBuffer}
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.serializer.SerializerManager
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.shuffle.adaptive.transport.FilesBackedResolver
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId}

/**
 * The resolver of mode=push: serves the layouts and chunks of the partitions this executor
 * merged ([[MergedBlocks]]) from its [[MergeStore]], and everything else from the map-output
 * files through `files`; takes the runs other executors push here. Pushes ride Spark's block
 * upload (a run travels as the batch block of its reduce range), whose shuffle blocks reach
 * `putShuffleBlockAsStream` (so do chunks other owners hand off here, [[ChunkHandOff]], and the
 * owner tables the driver sends, [[OwnerTables]]), and
 * merged reads Spark's fetch protocol, so both are authenticated
 * and encrypted as Spark's block transfers are.
 */
private[spark] final class MergingBlockResolver(
    conf: SparkConf,
    files: IndexShuffleBlockResolver,
    merges: MergeStore,
    tables: OwnerTables)
    extends FilesBackedResolver(conf, files) {

  override def getBlockData(blockId: BlockId, dirs: Option[Array[String]]): ManagedBuffer =
    blockId match {
      case MergedBlocks.Layout(shuffleId, start, end) =>
        new NioManagedBuffer(
          MergedBlocks.encode(merges.layout(shuffleId, start, end, forPeer = true)))
      case MergedBlocks.Chunk(shuffleId, chunkId) =>
        merges
          .chunk(shuffleId, chunkId)
          .getOrElse(throw new IOException(s"$blockId: no such merged chunk here"))
      case MergedBlocks.Range(shuffleId, start, end) =>
        merges
          .range(shuffleId, start, end)
          .getOrElse(throw new IOException(s"$blockId: partitions not sealed here"))
      case MergedBlocks.Hosted(shuffleId, partition, chunkId) =>
        merges
          .hostedChunk(shuffleId, partition, chunkId)
          .getOrElse(throw new IOException(s"$blockId: no such handed-off chunk here"))
      case MergedBlocks.Summary(shuffleId) =>
        new NioManagedBuffer(MergedBlocks.encodeSummary(merges.summary(shuffleId)))
      case id if MergedBlocks.isRoom(id) =>
        new NioManagedBuffer(ByteBuffer.allocate(8).putLong(0, merges.roomForPeers))
      case _ => files.getBlockData(blockId, dirs)
    }

  override def putShuffleBlockAsStream(
      blockId: BlockId,
      serializerManager: SerializerManager): StreamCallbackWithID = blockId match {
    case MergedBlocks.HandOff(shuffleId, partition, chunkId) =>
      merges.receiveHandOff(shuffleId, partition, chunkId)
    case MergedBlocks.TableUpdate(shuffleId) => tables.receive(blockId, shuffleId)
    case run: ShuffleBlockBatchId => merges.receiveRun(run)
    case _ => files.putShuffleBlockAsStream(blockId, serializerManager)
  }
}
