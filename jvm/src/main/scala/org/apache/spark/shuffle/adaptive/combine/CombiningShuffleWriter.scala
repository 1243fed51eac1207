package org.apache.spark.shuffle.adaptive.combine

import org.apache.spark.Partitioner
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.ShuffleWriter
import org.apache.spark.shuffle.adaptive.metrics.CombineCounters

/**
 * Spark's writer (with whatever serves its output), plus local reduction: the records written
 * are kept, by reduce partition (those partitions [[CombinedShuffle.keeps]]), as long as they
 * fit in the task's share of combine memory, and
 * once the map output is committed (and before its MapStatus leaves the task) they are folded
 * into the executor's combined records of the shuffle. A task that fails, or whose records did
 * not fit, folds nothing: its output is read from its file.
 */
private[spark] final class CombiningShuffleWriter[K, V](
    writer: ShuffleWriter[K, V],
    partitioner: Partitioner,
    mapId: Long,
    mapIndex: Int,
    executorId: String,
    shuffle: CombinedShuffle,
    counters: CombineCounters,
    combining: CombiningExecutors)
    extends ShuffleWriter[K, V] {

  private[this] val records = shuffle.newTaskRecords()
  private[this] var keeping = true

  override def write(in: Iterator[Product2[K, V]]): Unit =
    writer.write(in.map { record =>
      if (keeping) {
        val partition = partitioner.getPartition(record._1)
        if (shuffle.keeps(partition)) {
          keeping = records.add(partition, record.asInstanceOf[Product2[Any, Any]])
        }
      }
      record
    })

  override def stop(success: Boolean): Option[MapStatus] =
    try {
      val status = writer.stop(success)
      if (success && status.isDefined) {
        if (keeping) {
          val fold = shuffle.fold(mapId, mapIndex, records)
          counters.folded(fold.partitionsSkipped, fold.rows, fold.rowsMerged, fold.bytes)
          if (fold.rowsMerged > 0) {
            counters.combining += executorId
            combining.add(executorId)
          }
        } else counters.add(CombineCounters.MapsNotFolded, 1)
      }
      status
    } finally records.release()

  override def getPartitionLengths(): Array[Long] = writer.getPartitionLengths()
}
