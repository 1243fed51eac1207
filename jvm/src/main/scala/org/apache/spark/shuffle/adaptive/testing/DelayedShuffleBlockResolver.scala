package org.apache.spark.shuffle.adaptive.testing

import org.apache.spark.SparkConf
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.storage.BlockId

/**
 * Testing only: Spark's index/data-file resolver (the same files the sort writers produce) that
 * sleeps `millis` before handing out each block, on the serving executor's thread, as a node
 * with a slow disk or an overloaded CPU would. Blocks of this executor cannot be migrated at
 * decommission (its map of stored shuffles stays empty).
 */
private[spark] final class DelayedShuffleBlockResolver(conf: SparkConf, millis: Long)
  extends IndexShuffleBlockResolver(conf) {

  override def getBlockData(blockId: BlockId, dirs: Option[Array[String]]): ManagedBuffer = {
    Thread.sleep(millis)
    super.getBlockData(blockId, dirs)
  }
}
