package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

import org.apache.spark.FetchFailed
import org.apache.spark.scheduler.{SparkListener, SparkListenerTaskEnd}

/**
 * Driver side: adds up the [[FetchCounters]] that finished tasks report, for the application
 * and per executor, from the per-task values of the plugin's accumulators, what local
 * reduction did per shuffle (for the newest [[FetchMetricsListener.KeptShuffles]]), and keeps
 * `source` (the driver's [[PluginMetricsSource]]) up to date with them.
 */
private[spark] final class FetchMetricsListener(source: PluginMetricsSource) extends SparkListener {

  private[this] val application = new FetchCounters
  private[this] val byExecutor = mutable.TreeMap.empty[String, FetchCounters]
  private[this] val combineByShuffle = mutable.TreeMap.empty[Int, CombineCounters]

  /** The application's counters from the tasks that ended after [[mark]], once it was called. */
  private[this] var sinceMark: Option[FetchCounters] = None

  override def onTaskEnd(taskEnd: SparkListenerTaskEnd): Unit = {
    failedCombinedRead(taskEnd).foreach { case (shuffleId, counters) =>
      add(taskEnd, shuffleId, counters)
    }
    FetchMetricsAccumulator.ofTask(taskEnd).foreach { case (shuffleId, counters) =>
      add(taskEnd, shuffleId, counters)
    }
  }

  /**
   * A reduce task that failed reading combined records (whose own counters, a failed task's, do
   * not reach the driver): its shuffle and a count of one failed read.
   */
  private def failedCombinedRead(taskEnd: SparkListenerTaskEnd): Option[(Int, FetchCounters)] =
    taskEnd.reason match {
      case f: FetchFailed if Option(f.message).exists(_.contains(CombineCounters.OnlyCopy)) =>
        val counters = new FetchCounters
        counters.combine.add(CombineCounters.FailedReads, 1)
        Some(f.shuffleId -> counters)
      case _ => None
    }

  private def add(taskEnd: SparkListenerTaskEnd, shuffleId: Int, counters: FetchCounters): Unit =
    source.update(
      "",
      synchronized {
        application.merge(counters)
        sinceMark.foreach(_.merge(counters))
        byExecutor.getOrElseUpdate(taskEnd.taskInfo.executorId, new FetchCounters).merge(counters)
        if (!counters.combine.isZero) {
          combineByShuffle.getOrElseUpdate(shuffleId, new CombineCounters).merge(counters.combine)
          FetchMetricsListener.keepNewest(combineByShuffle)
        }
        snapshot()
      })

  /** What local reduction did of `shuffleId` so far, map and reduce tasks; empty if nothing. */
  def combineOf(shuffleId: Int): Map[String, Any] =
    synchronized(combineByShuffle.get(shuffleId).fold(Map.empty[String, Any])(_.toMap))

  /**
   * From now on, the application's counters are also added up apart ("since_mark"): those of a
   * benchmark's timed run after untimed warm-up runs in the same application.
   */
  def mark(): Unit = synchronized { sinceMark = Some(new FetchCounters) }

  /**
   * `{"application": counters, "since_mark": counters (empty until [[mark]]), "executors":
   * {executor id: counters}, "combine": {shuffle id: counters}}`.
   */
  def snapshot(): Map[String, Any] = synchronized {
    Map(
      "application" -> application.toMap,
      "since_mark" -> sinceMark.fold(Map.empty[String, Any])(_.toMap),
      "executors" -> byExecutor.iterator.map { case (id, c) => id -> c.toMap }.toMap,
      "combine" -> combineByShuffle.iterator.map { case (id, c) => id.toString -> c.toMap }.toMap)
  }
}

private[spark] object FetchMetricsListener {

  /** Shuffles whose per-shuffle figures (local reduction, reads at owners, CPU) are kept. */
  val KeptShuffles = 256

  // Shuffle ids grow with time: the smallest is the oldest.
  def keepNewest(byShuffle: mutable.TreeMap[Int, _]): Unit =
    while (byShuffle.size > KeptShuffles) byShuffle -= byShuffle.firstKey
}
