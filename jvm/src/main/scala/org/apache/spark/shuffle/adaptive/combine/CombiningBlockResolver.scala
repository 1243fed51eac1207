package org.apache.spark.shuffle.adaptive.combine

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.network.client.StreamCallbackWithID
import org.apache.spark.serializer.SerializerManager
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.storage.BlockId
import org.apache.spark.shuffle.adaptive.protocol.BlockMessage
import org.apache.spark.shuffle.adaptive.transport.FilesBackedResolver

/**
 * Serves combined reads ([[BlockMessage.CombinedReadRequest]]) from this executor's [[CombineStore]], and every
 * other block, and every upload, through `next` (the map-output files, or mode=push's resolver).
 * Combined reads ride Spark's fetch protocol, so they are authenticated and encrypted as Spark's
 * block transfers are.
 */
private[spark] final class CombiningBlockResolver(
    conf: SparkConf,
    files: IndexShuffleBlockResolver,
    next: IndexShuffleBlockResolver,
    store: CombineStore)
    extends FilesBackedResolver(conf, files) {

  override def getBlockData(blockId: BlockId, dirs: Option[Array[String]]): ManagedBuffer =
    blockId match {
      case BlockMessage(BlockMessage.CombinedReadRequest(shuffleId, start, end)) =>
        store.read(shuffleId, start, end)
      case _ => next.getBlockData(blockId, dirs)
    }

  override def putShuffleBlockAsStream(
      blockId: BlockId,
      serializerManager: SerializerManager): StreamCallbackWithID =
    next.putShuffleBlockAsStream(blockId, serializerManager)
}
