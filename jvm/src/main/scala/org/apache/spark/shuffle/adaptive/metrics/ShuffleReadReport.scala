package org.apache.spark.shuffle.adaptive.metrics

import org.apache.spark.scheduler.SparkListenerEvent

/**
 * What one stage's reduce tasks read of one shuffle, for the skew report (`python -m
 * pyspark_shuffle report`): the bytes of each reduce partition (`partitionBytesFrom` says
 * whence: "reduce tasks", exact, where every task read one partition, else "map outputs",
 * the MapStatus sizes, which Spark keeps rounded to within 10%), bytes and wait per source
 * executor, per source the bytes it sent to other executors, the rate they observed from it
 * and its host (which source's link held the stage), one row per reduce task (at most
 * [[ShuffleReadReport.MaxTasks]]; `tasksLeftOut` counts the rest), in mode=push how many of
 * the bytes came out of merged chunks and how many from files, how many of the chunks' were
 * held by the reading task's executor, and how many of the tasks that read chunks ran at their
 * owner (`merged`: "chunks", "files", "at_owner", "tasks", "tasks_at_owner"),
 * and what local reduction did of the shuffle so far (`combine`: its map tasks' folds and its
 * reduce tasks' combined reads, the counters of [[CombineCounters]]), and what its map
 * stage and the stages that read it cost in executor CPU so far (`cpu`: "map" and "reduce", each
 * a [[StageCpu]]).
 * Posted to the listener bus when the stage completes, so an
 * event log (`spark.eventLog.enabled`) keeps it as a JSON line; Spark's own replay skips it.
 */
private[spark] final case class ShuffleReadReport(
    shuffleId: Int,
    stageId: Int,
    stageAttemptId: Int,
    partitionBytes: Seq[Long],
    partitionBytesFrom: String,
    bytesBySource: Map[String, Long],
    waitMsBySource: Map[String, Double],
    remoteBytesBySource: Map[String, Long],
    rateBySource: Map[String, Double],
    hostBySource: Map[String, String],
    tasks: Seq[ReduceTaskRow],
    tasksLeftOut: Int,
    merged: Map[String, Long],
    combine: Map[String, Any],
    cpu: Map[String, Any])
    extends SparkListenerEvent {

  /** Bytes its reduce tasks read from other executors. */
  def remoteBytes: Long = remoteBytesBySource.values.sum

  /**
   * The share of its reduce tasks' time they spent waiting for blocks (iShuffle's shuffle
   * delay), over the tasks it lists; none without any.
   */
  def fetchWaitShare: Option[Double] = {
    val ran = tasks.iterator.map(t => t.finishTime - t.launchTime).sum
    if (ran <= 0) None else Some(tasks.iterator.map(_.fetchWaitMs).sum.toDouble / ran)
  }
}

private[spark] object ShuffleReadReport {
  val MaxTasks = 10000
}
