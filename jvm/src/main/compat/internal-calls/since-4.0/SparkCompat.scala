package org.apache.spark.shuffle.adaptive.compat

import java.io.InputStream

import org.apache.spark.{MapOutputTracker, MapOutputTrackerMaster, MapOutputTrackerWorker, SparkEnv, TaskContext}
import org.apache.spark.shuffle.{FetchFailedException, MetadataFetchFailedException}
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

  /**
   * As [[mapSizesByExecutorId]], and every map output in the map range with its executor, map id
   * and map index, empty blocks included: both from one view of the map statuses (a later one
   * may have others, once map tasks ran again).
   */
  def mapOutputsByExecutorId(
      shuffleId: Int,
      startMapIndex: Int,
      endMapIndex: Int,
      startPartition: Int,
      endPartition: Int): (
      Iterator[(BlockManagerId, collection.Seq[(BlockId, Long, Int)])],
      Seq[(BlockManagerId, Long, Int)]) = {
    val statuses = SparkEnv.get.mapOutputTracker match {
      case master: MapOutputTrackerMaster =>
        master.shuffleStatuses.get(shuffleId).map(_.withMapStatuses(_.clone()))
      case worker: MapOutputTrackerWorker =>
        // Fetches them from the driver if this executor does not have them (or dropped them
        // for a newer epoch meanwhile).
        Iterator
          .continually {
            worker.getMapSizesByExecutorId(
              shuffleId,
              startMapIndex,
              endMapIndex,
              startPartition,
              endPartition)
            worker.mapStatuses.get(shuffleId)
          }
          .take(3)
          .collectFirst { case Some(s) => s }
      case _ => None
    }
    val all = statuses.getOrElse(
      throw new MetadataFetchFailedException(shuffleId, startPartition, "no map statuses"))
    val end = if (endMapIndex == Int.MaxValue) all.length else math.min(endMapIndex, all.length)
    val blocks = MapOutputTracker
      .convertMapStatuses(shuffleId, startPartition, endPartition, all, startMapIndex, end)
      .iter
    val outputs = (startMapIndex until end).map { i =>
      val status = all(i)
      (status.location, status.mapId, i)
    }
    (blocks, outputs)
  }

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
