package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

import org.apache.spark.scheduler.{SparkListener, SparkListenerStageCompleted, SparkListenerTaskEnd}

/**
 * Driver side: per shuffle, what the stages that wrote it (its map stage's attempts) and the
 * stages that read it cost their executors in CPU ([[StageCpu]]), for `metrics(spark)` and the
 * skew report. A stage that reads one shuffle and writes the next counts for both; a stage that
 * reads two (a join) counts whole for each. Kept for the newest
 * [[FetchMetricsListener.KeptShuffles]].
 */
private[spark] final class ShuffleCpu extends SparkListener {

  private final class Sides(var map: StageCpu, var reduce: StageCpu) {
    def toMap: Map[String, Any] = Map("map" -> map.toMap, "reduce" -> reduce.toMap)
  }

  /** (stage, attempt) -> the shuffles its reduce tasks read so far */
  private[this] val reading = mutable.HashMap.empty[(Int, Int), mutable.Set[Int]]
  private[this] val byShuffle = mutable.TreeMap.empty[Int, Sides]

  override def onTaskEnd(taskEnd: SparkListenerTaskEnd): Unit =
    FetchMetricsAccumulator.ofTask(taskEnd).filter(_._2(FetchCounters.ReduceTasks) > 0).foreach {
      case (shuffleId, _) =>
        synchronized {
          reading
            .getOrElseUpdate(
              (taskEnd.stageId, taskEnd.stageAttemptId),
              mutable.Set.empty) += shuffleId
        }
    }

  override def onStageCompleted(completed: SparkListenerStageCompleted): Unit = {
    val stage = completed.stageInfo
    val cpu = StageCpu.of(stage)
    synchronized {
      stage.shuffleDepId.foreach(id => sides(id).map += cpu)
      reading
        .remove((stage.stageId, stage.attemptNumber()))
        .foreach(_.foreach { id =>
          sides(id).reduce += cpu
        })
      FetchMetricsListener.keepNewest(byShuffle)
    }
  }

  private def sides(shuffleId: Int): Sides =
    byShuffle.getOrElseUpdate(shuffleId, new Sides(StageCpu.None, StageCpu.None))

  /** `{"map": cpu, "reduce": cpu}` of `shuffleId` so far; empty if no stage of it completed. */
  def of(shuffleId: Int): Map[String, Any] =
    synchronized(byShuffle.get(shuffleId).fold(Map.empty[String, Any])(_.toMap))

  /** Of every shuffle kept, by shuffle id. */
  def snapshot(): Map[String, Any] = synchronized {
    byShuffle.iterator.map { case (id, s) => id.toString -> s.toMap }.toMap
  }
}
