package org.apache.spark.shuffle.adaptive.fetch

import scala.collection.mutable

import org.apache.spark.{SparkConf, TaskContext}
import org.apache.spark.internal.config
import org.apache.spark.io.CompressionCodec
import org.apache.spark.serializer.Serializer
import org.apache.spark.storage.{ShuffleBlockBatchId, ShuffleBlockId}
import org.apache.spark.shuffle.adaptive.compat.SparkCompat

/**
 * Spark's batch fetch of contiguous reduce partitions (`ShuffleBlockBatchId`): a task that reads
 * several partitions of a map output asks for them as one block, one range of the map's data file.
 */
private[spark] object BatchFetch {

  /**
   * Spark's conditions (`BlockStoreShuffleReader.fetchContinuousBlocksInBatch`): the task asked
   * for it (AQE's coalesced reads set `spark.sql.adaptive.fetchShuffleBlocksInBatch` as a local
   * property and read more than one partition), the serializer's records may be concatenated,
   * so may the codec's streams, the fetch protocol knows batches and I/O encryption is off (an
   * encrypted range cannot be decrypted as one stream, SPARK-34790).
   */
  def enabled(
      requested: Boolean,
      serializerRelocatable: Boolean,
      compressed: Boolean,
      codecConcatenates: Boolean,
      oldFetchProtocol: Boolean,
      ioEncryption: Boolean): Boolean =
    requested && serializerRelocatable && (!compressed || codecConcatenates) &&
      !oldFetchProtocol && !ioEncryption

  def enabled(
      conf: SparkConf,
      serializer: Serializer,
      startPartition: Int,
      endPartition: Int,
      context: TaskContext): Boolean =
    // Checked first: it is false for most tasks, and the rest creates a codec.
    SparkCompat.canUseBatchFetch(startPartition, endPartition, context) &&
      concatenable(conf, serializer)

  /**
   * Whether blocks of this shuffle may be read back to back as one stream: Spark's batch-fetch
   * conditions less the task's request (a merged chunk is read whole in any case).
   */
  def concatenable(conf: SparkConf, serializer: Serializer): Boolean = {
    val compressed = conf.get(config.SHUFFLE_COMPRESS)
    enabled(
      requested = true,
      serializer.supportsRelocationOfSerializedObjects,
      compressed,
      compressed &&
        CompressionCodec.supportsConcatenationOfSerializedStreams(
          CompressionCodec.createCodec(conf)),
      conf.get(config.SHUFFLE_USE_OLD_FETCH_PROTOCOL),
      conf.get(config.IO_ENCRYPTION_ENABLED))
  }

  /**
   * One batch block per run of a map output's blocks: consecutive blocks of the same map become
   * one block spanning their reduce ids, with their sizes summed. The map output tracker leaves
   * out empty blocks, so a range may span partitions missing from `blocks` (it adds no bytes)
   * unless `acrossGaps` is off: then some of them are missing because they are read elsewhere
   * (out of a merged chunk) and a range ends at each gap. Every block becomes a batch block, even
   * alone, because the fetch protocol takes either kind in a request, never both.
   */
  def merge(blocks: Seq[BlockRef], acrossGaps: Boolean = true): IndexedSeq[BlockRef] = {
    val merged = mutable.ArrayBuffer.empty[BlockRef]
    blocks.foreach { ref =>
      val id = ref.blockId.asInstanceOf[ShuffleBlockId]
      merged.lastOption match {
        case Some(BlockRef(last: ShuffleBlockBatchId, size, mapIndex))
            if last.shuffleId == id.shuffleId && last.mapId == id.mapId &&
              (last.endReduceId == id.reduceId || acrossGaps && last.endReduceId < id.reduceId) =>
          merged(merged.size - 1) =
            BlockRef(last.copy(endReduceId = id.reduceId + 1), size + ref.size, mapIndex)
        case _ =>
          merged += BlockRef(
            ShuffleBlockBatchId(id.shuffleId, id.mapId, id.reduceId, id.reduceId + 1),
            ref.size,
            ref.mapIndex)
      }
    }
    merged.toIndexedSeq
  }
}
