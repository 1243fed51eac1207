package org.apache.spark.shuffle.adaptive.compat

import java.io.InputStream

import org.apache.spark.{MapOutputTrackerMaster, SparkEnv, TaskContext}
import org.apache.spark.shuffle.FetchFailedException
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.util.Utils

/**
 * Spark-internal calls whose signatures have moved between Spark releases before, in one place;
 * the same for Spark 4.0 to 4.3. A minor that changes one gets a `since-X.Y` copy of this file
 * (see project/SparkCompat.scala).
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
      shuffleId,
      startMapIndex,
      endMapIndex,
      startPartition,
      endPartition)

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

  /**
   * Bytes of each of the `numReducers` reduce partitions of a shuffle, from the MapStatus sizes
   * of its registered map outputs, the first `maxMaps` of them (driver only; empty for a shuffle
   * the tracker does not know).
   */
  def partitionBytes(shuffleId: Int, numReducers: Int, maxMaps: Int = Int.MaxValue): Seq[Long] =
    SparkEnv.get.mapOutputTracker match {
      case tracker: MapOutputTrackerMaster =>
        tracker.shuffleStatuses.get(shuffleId).toSeq.flatMap { status =>
          status.withMapStatuses { statuses =>
            val sizes = new Array[Long](numReducers)
            statuses.iterator.filter(_ != null).take(maxMaps).foreach { s =>
              (0 until numReducers).foreach(r => sizes(r) += s.getSizeForBlock(r))
            }
            sizes.toSeq
          }
        }
      case _ => Nil
    }

  /** Whether the task may fetch contiguous partitions as batch blocks (AQE's local property). */
  def canUseBatchFetch(startPartition: Int, endPartition: Int, context: TaskContext): Boolean =
    SortShuffleManager.canUseBatchFetch(startPartition, endPartition, context)
}
