package org.apache.spark.shuffle.adaptive.push.driver

import scala.collection.mutable

import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}
import org.apache.spark.shuffle.adaptive.metrics.{FetchCounters, FetchMetricsAccumulator, FetchMetricsListener}

/**
 * mode=push: where each shuffle's reduce tasks ran against where what they read was merged, from
 * the [[FetchCounters]] its finished reduce tasks report: how many tasks read merged chunks and
 * how many of those ran at the owner of most of them, how many of the bytes read were merged
 * (`bytes_from_chunks`) and held by the reading task's own executor (`bytes_at_owner`). Kept for
 * the newest [[FetchMetricsListener.KeptShuffles]] shuffles.
 */
private[spark] final class OwnerReads extends SparkListener {
  import OwnerReads.Tally

  private[this] val byShuffle = mutable.TreeMap.empty[Int, Tally]

  override def onTaskEnd(taskEnd: SparkListenerTaskEnd): Unit =
    FetchMetricsAccumulator.ofTask(taskEnd).foreach { case (shuffleId, counters) =>
      add(shuffleId, counters)
    }

  /** A finished task's counters of `shuffleId`; those of map tasks say nothing of reads. */
  def add(shuffleId: Int, counters: FetchCounters): Unit =
    if (counters(FetchCounters.ReduceTasks) > 0) synchronized {
      byShuffle.getOrElseUpdate(shuffleId, new Tally).add(counters)
      FetchMetricsListener.keepNewest(byShuffle)
    }

  /** The shuffles whose reduce tasks read merged chunks, as the metrics report them. */
  def snapshot(): Map[Int, Map[String, Any]] = synchronized {
    byShuffle.iterator.collect { case (id, t) if t.readChunks => id -> t.toMap }.toMap
  }
}

private object OwnerReads {

  private final class Tally {
    private[this] var tasks = 0L
    private[this] var tasksReadingChunks = 0L
    private[this] var tasksAtOwner = 0L
    private[this] var bytes = 0L
    private[this] var bytesFromChunks = 0L
    private[this] var bytesAtOwner = 0L

    def add(counters: FetchCounters): Unit = {
      tasks += counters(FetchCounters.ReduceTasks)
      tasksReadingChunks += counters(FetchCounters.StoredReduceTasks)
      tasksAtOwner += counters(FetchCounters.StoredReduceTasksOnOwner)
      bytes += counters(FetchCounters.BytesByTransport).values.sum
      bytesFromChunks += counters(FetchCounters.BytesFromStores)
      bytesAtOwner += counters(FetchCounters.BytesAtOwner)
    }

    def readChunks: Boolean = tasksReadingChunks > 0

    def toMap: Map[String, Any] = Map(
      "reduce_tasks" -> tasks,
      "reduce_tasks_reading_chunks" -> tasksReadingChunks,
      "reduce_tasks_at_owner" -> tasksAtOwner,
      "bytes_read" -> bytes,
      "bytes_from_chunks" -> bytesFromChunks,
      "bytes_at_owner" -> bytesAtOwner)
  }
}
