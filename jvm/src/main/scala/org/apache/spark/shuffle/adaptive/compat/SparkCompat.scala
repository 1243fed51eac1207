package org.apache.spark.shuffle.adaptive.compat

import java.io.InputStream

import org.apache.spark.{SparkEnv, TaskContext}
import org.apache.spark.shuffle.FetchFailedException
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.util.Utils

/**
 * The Spark internals whose signatures move between minor versions, in one place. This file is
 * written for Spark 4.1; another 4.x minor gets its own copy of this object and nothing else.
 */
private[spark] object SparkCompat {

  /** Map outputs for a reduce task, with `endMapIndex = Int.MaxValue` meaning all maps. */
  def mapSizesByExecutorId(
      shuffleId: Int,
      startMapIndex: Int,
      endMapIndex: Int,
      startPartition: Int,
      endPartition: Int): Iterator[(BlockManagerId, collection.Seq[(BlockId, Long, Int)])] =
    SparkEnv.get.mapOutputTracker.getMapSizesByExecutorId(
      shuffleId, startMapIndex, endMapIndex, startPartition, endPartition)

  def fetchFailed(
      address: BlockManagerId,
      shuffleId: Int,
      mapId: Long,
      mapIndex: Int,
      reduceId: Int,
      message: String,
      cause: Throwable): FetchFailedException =
    new FetchFailedException(address, shuffleId, mapId, mapIndex, reduceId, message, cause)

  /** Reads up to `maxSize` bytes into memory now; the rest is read on demand. */
  def copyStreamUpTo(in: InputStream, maxSize: Long): InputStream =
    Utils.copyStreamUpTo(in, maxSize)

  /** Whether the task may fetch contiguous partitions as batch blocks (AQE's local property). */
  def canUseBatchFetch(startPartition: Int, endPartition: Int, context: TaskContext): Boolean =
    SortShuffleManager.canUseBatchFetch(startPartition, endPartition, context)
}
