package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

import org.apache.spark.scheduler.{SparkListener, SparkListenerEvent, SparkListenerStageCompleted, SparkListenerTaskEnd}

/**
 * Driver side: collects, per stage and shuffle, the [[FetchCounters]] each reduce task reports
 * (the per-task values of the plugin's accumulators) and, when the stage completes, makes a
 * [[ShuffleReadReport]] of them, keeps the latest per shuffle and `post`s it (to the listener
 * bus, hence the event log). Reports outlive their shuffles, which Spark's cleaner removes as
 * soon as their RDDs are collected, often before anyone asks: the newest [[ShuffleReadReporter.Kept]]
 * are kept.
 *
 * @param partitionBytes a shuffle's bytes per reduce partition, from its map outputs
 * @param combineOf what local reduction did of a shuffle so far
 * @param cpu what each shuffle's stages cost in CPU, to which a completed stage adds what it read
 */
private[spark] final class ShuffleReadReporter(
    partitionBytes: Int => Seq[Long],
    combineOf: Int => Map[String, Any],
    cpu: ShuffleCpu,
    post: SparkListenerEvent => Unit)
    extends SparkListener {

  private final class Reading {
    val counters = new FetchCounters
    val tasks = mutable.ArrayBuffer.empty[ReduceTaskRow]
    var left = 0

    val links = new SourceLinkTally(ShuffleReadReporter.MaxPairs)
  }

  /** (stage, attempt) -> shuffle -> what its tasks read so far */
  private[this] val reading = mutable.HashMap.empty[(Int, Int), mutable.HashMap[Int, Reading]]
  private[this] val latest = mutable.TreeMap.empty[Int, ShuffleReadReport]

  // Map tasks report only what they folded (local reduction), which combineOf keeps.
  override def onTaskEnd(taskEnd: SparkListenerTaskEnd): Unit =
    FetchMetricsAccumulator.ofTask(taskEnd).filter(_._2(FetchCounters.ReduceTasks) > 0).foreach {
      case (shuffleId, counters) =>
        val info = taskEnd.taskInfo
        synchronized {
          val r = reading
            .getOrElseUpdate((taskEnd.stageId, taskEnd.stageAttemptId), mutable.HashMap.empty)
            .getOrElseUpdate(shuffleId, new Reading)
          r.counters.merge(counters)
          r.links.add(info.executorId, counters)
          if (r.tasks.size < ShuffleReadReport.MaxTasks) {
            r.tasks += ReduceTaskRow(
              counters.startPartition,
              counters.endPartition,
              info.executorId,
              info.launchTime,
              info.finishTime,
              counters(FetchCounters.BytesBySource).values.sum,
              counters(FetchCounters.FetchWaitMs),
              counters(FetchCounters.LimitMin),
              counters(FetchCounters.LimitMax),
              if (counters(FetchCounters.FetchMs) == 0) 0.0
              else counters(FetchCounters.LimitByteMs) / counters(FetchCounters.FetchMs))
          } else {
            r.left += 1
          }
        }
    }

  override def onStageCompleted(completed: SparkListenerStageCompleted): Unit = {
    val stage = completed.stageInfo
    val done = synchronized(reading.remove((stage.stageId, stage.attemptNumber())))
    val stageCpu = StageCpu.of(stage)
    done.foreach(_.foreach { case (shuffleId, r) =>
      val (bytes, from) = partitionSizes(shuffleId, r)
      val report = ShuffleReadReport(
        shuffleId,
        stage.stageId,
        stage.attemptNumber(),
        bytes,
        from,
        r.counters(FetchCounters.BytesBySource).toMap,
        r.counters(FetchCounters.WaitMsBySource).toMap,
        r.links.remoteBytesBySource,
        r.links.rateBySource,
        r.counters(FetchCounters.HostBySource).toMap,
        r.tasks.toSeq,
        r.left,
        merged(r.counters),
        combineOf(shuffleId),
        cpu.read(shuffleId, stageCpu))
      synchronized {
        latest(shuffleId) = report
        // Shuffle ids grow with time: the smallest is the oldest.
        while (latest.size > ShuffleReadReporter.Kept) latest -= latest.firstKey
      }
      post(report)
    })
  }

  /**
   * Bytes read out of merged chunks and from files, those of the chunks held by the reading
   * task's own executor (`at_owner`), and the tasks that read chunks and ran at their owner,
   * where any came out of chunks.
   */
  private def merged(counters: FetchCounters): Map[String, Long] =
    if (counters(FetchCounters.BytesFromStores) == 0) Map.empty
    else {
      val read = counters(FetchCounters.BytesBySource).values.sum
      Map(
        "chunks" -> counters(FetchCounters.BytesFromStores),
        "files" -> (read - counters(FetchCounters.BytesFromStores)),
        "at_owner" -> counters(FetchCounters.BytesAtOwner),
        "tasks" -> counters(FetchCounters.StoredReduceTasks),
        "tasks_at_owner" -> counters(FetchCounters.StoredReduceTasksOnOwner))
    }

  /**
   * Exact sizes where every reduce task read one partition and every partition was read (the
   * bytes its tasks read: several tasks share a partition AQE split by map ranges), else the
   * map outputs' sizes.
   */
  private def partitionSizes(shuffleId: Int, r: Reading): (Seq[Long], String) = {
    val mapped = partitionBytes(shuffleId)
    // Combined records are fewer bytes than their partition's.
    val single = r.left == 0 && r.tasks.forall(t => t.endPartition == t.startPartition + 1) &&
      r.counters.combine(CombineCounters.SegmentsRead) == 0
    if (single && r.tasks.map(_.startPartition).toSet == mapped.indices.toSet) {
      val read = new Array[Long](mapped.size)
      r.tasks.foreach(t => read(t.startPartition) += t.bytes)
      (read.toSeq, "reduce tasks")
    } else {
      (mapped, "map outputs")
    }
  }

  /** The latest report of each of the newest shuffles read, by shuffle id. */
  def reports: Seq[ShuffleReadReport] = synchronized(latest.values.toSeq)
}

private[spark] object ShuffleReadReporter {

  /** A report holds up to [[ShuffleReadReport.MaxTasks]] rows: a few MB at most each. */
  val Kept = 32

  /** Reader-source pairs a report tracks per stage (all of them up to ~300 executors). */
  val MaxPairs = 100000
}
