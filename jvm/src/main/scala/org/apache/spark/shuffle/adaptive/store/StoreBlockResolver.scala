package org.apache.spark.shuffle.adaptive.store

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.serializer.SerializerManager
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.shuffle.adaptive.transport.FilesBackedResolver
import org.apache.spark.storage.{BlockId, ShuffleBlockBatchId, ShuffleBlockId}

/**
 * Serves a shuffle block from this executor's [[ShuffleStore]] when the store holds it, else
 * from the map-output files through `files`; takes the runs of blocks other executors spill here.
 * The spill rides Spark's block upload: an uploaded shuffle block (a run travels as the batch
 * block of its reduce range) reaches `putShuffleBlockAsStream`, the path block migration uses,
 * so it is authenticated and encrypted as Spark's block transfers are.
 */
private[spark] final class StoreBlockResolver(
    conf: SparkConf,
    files: IndexShuffleBlockResolver,
    store: ShuffleStore)
    extends FilesBackedResolver(conf, files) {

  override def getBlockData(blockId: BlockId, dirs: Option[Array[String]]): ManagedBuffer =
    blockId match {
      case id: ShuffleBlockId => store.get(id).getOrElse(files.getBlockData(blockId, dirs))
      case _ => files.getBlockData(blockId, dirs)
    }

  override def putShuffleBlockAsStream(
      blockId: BlockId,
      serializerManager: SerializerManager): StreamCallbackWithID = blockId match {
    case run: ShuffleBlockBatchId => store.receiveRun(run)
    case _ => files.putShuffleBlockAsStream(blockId, serializerManager)
  }
}
