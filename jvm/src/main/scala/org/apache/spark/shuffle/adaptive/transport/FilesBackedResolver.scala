package org.apache.spark.shuffle.adaptive.transport

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.shuffle.{IndexShuffleBlockResolver, ShuffleBlockInfo}
import org.apache.spark.storage.BlockId

/**
 * A resolver that serves some blocks from memory and everything else from the map-output files
 * through `files`. It is an index resolver of the same files because Spark casts to one
 * (checksum diagnosis); what block migration and cleanup need is asked of `files`.
 */
private[spark] abstract class FilesBackedResolver(conf: SparkConf, files: IndexShuffleBlockResolver)
    extends IndexShuffleBlockResolver(conf) {

  override def getStoredShuffles(): Seq[ShuffleBlockInfo] = files.getStoredShuffles()

  override def getMigrationBlocks(info: ShuffleBlockInfo): List[(BlockId, ManagedBuffer)] =
    files.getMigrationBlocks(info)

  override def addShuffleToSkip(shuffleId: Int): Unit = files.addShuffleToSkip(shuffleId)

  override def stop(): Unit = files.stop()
}
