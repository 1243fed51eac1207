package org.apache.spark.shuffle.adaptive.testing

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.{SparkConf, TaskContext}
import org.apache.spark.network.buffer.ManagedBuffer
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.storage.BlockId

/**
 * Testing only: Spark's index/data-file resolver (the same files the sort writers produce) that
 * sleeps `millis` before handing out each block, on the serving executor's thread, as a node
 * with a slow disk or an overloaded CPU would. Blocks of this executor cannot be migrated at
 * decommission (its map of stored shuffles stays empty).
 *
 * It also counts the blocks it serves to other executors (calls outside any task: Spark's block
 * server), so a test can show which path served a shuffle; with `millis` = 0 it only counts.
 */
private[spark] final class DelayedShuffleBlockResolver(conf: SparkConf, millis: Long)
    extends IndexShuffleBlockResolver(conf) {

  override def getBlockData(blockId: BlockId, dirs: Option[Array[String]]): ManagedBuffer = {
    if (TaskContext.get() == null) DelayedShuffleBlockResolver.servedToOthers.incrementAndGet()
    if (millis > 0) Thread.sleep(millis)
    super.getBlockData(blockId, dirs)
  }
}

private[spark] object DelayedShuffleBlockResolver {

  /** Blocks this JVM's block server handed out for other executors. */
  val servedToOthers = new AtomicLong
}
