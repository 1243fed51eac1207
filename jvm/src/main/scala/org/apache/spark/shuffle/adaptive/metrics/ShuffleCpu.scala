package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

import org.apache.spark.scheduler.{SparkListener, SparkListenerStageCompleted}

/**
 * Driver side: per shuffle, what the stages that wrote it (its map stage's attempts) and the
 * stages that read it cost their executors in CPU ([[StageCpu]]), for `metrics(spark)` and the
 * skew report. The map side comes from each completed stage that wrote a shuffle; the reduce side
 * from [[ShuffleReadReporter]], which knows which shuffles a completed stage's reduce tasks read.
 * A stage that reads one shuffle and writes the next counts for both; a stage that reads two (a
 * join) counts whole for each. Kept for the newest [[FetchMetricsListener.KeptShuffles]].
 */
private[spark] final class ShuffleCpu extends SparkListener {

  private final class Sides(var map: StageCpu, var reduce: StageCpu) {
    def toMap: Map[String, Any] = Map("map" -> map.toMap, "reduce" -> reduce.toMap)
  }

  private[this] val byShuffle = mutable.TreeMap.empty[Int, Sides]

  override def onStageCompleted(completed: SparkListenerStageCompleted): Unit = {
    val stage = completed.stageInfo
    stage.shuffleDepId.foreach { id =>
      synchronized {
        sides(id).map += StageCpu.of(stage)
        FetchMetricsListener.keepNewest(byShuffle)
      }
    }
  }

  /** Adds `cpu`, a completed stage that read `shuffleId`; answers the shuffle's figures so far. */
  def read(shuffleId: Int, cpu: StageCpu): Map[String, Any] = synchronized {
    val read = sides(shuffleId)
    read.reduce += cpu
    FetchMetricsListener.keepNewest(byShuffle)
    read.toMap
  }

  private def sides(shuffleId: Int): Sides =
    byShuffle.getOrElseUpdate(shuffleId, new Sides(StageCpu.None, StageCpu.None))

  /** Of every shuffle kept, by shuffle id. */
  def snapshot(): Map[String, Any] = synchronized {
    byShuffle.iterator.map { case (id, s) => id.toString -> s.toMap }.toMap
  }
}
