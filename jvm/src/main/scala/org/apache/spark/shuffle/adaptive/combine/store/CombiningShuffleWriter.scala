package org.apache.spark.shuffle.adaptive.combine.store

import org.apache.spark.{Partitioner, TaskContext}
import org.apache.spark.scheduler.MapStatus
import org.apache.spark.shuffle.ShuffleWriter
import org.apache.spark.shuffle.adaptive.metrics.{CombineCounters, FetchCounters}
import org.apache.spark.shuffle.adaptive.combine.CombineSpec
import org.apache.spark.shuffle.adaptive.combine.driver.CombiningExecutors
import org.apache.spark.shuffle.adaptive.combine.map.{KeySample, TaskSample, Verdict}

/**
 * Spark's writer (with whatever serves its output), with local reduction in place of part of
 * its work: a map task that folds keeps its records, by reduce partition, as long as they fit
 * in the task's share of combine memory, and passes Spark's writer only those that do not fit,
 * so its file holds what it did not fold (no records at all where everything fits). Once that
 * file is committed, and before its MapStatus leaves the task, the kept records are folded into
 * the executor's combined records of the shuffle, which then are their only copy. Whether a map
 * task folds is its executor's [[Verdict]]: a judging task writes its file and samples its keys
 * (and may find part way that folding pays, and fold the rest), and one where folding does not
 * pay only writes.
 *
 * A map task Spark runs again (a retry, a speculative copy, a stage resubmitted because map
 * outputs were lost, or its map index started on this executor before) writes all its records to
 * its file, so that recovering from a lost or unusable fold never depends on folding again. A
 * task whose records do not fit writes the rest to its file; one that fails folds nothing.
 */
private[spark] final class CombiningShuffleWriter[K, V](
    writer: ShuffleWriter[K, V],
    partitioner: Partitioner,
    mapId: Long,
    context: TaskContext,
    executorId: String,
    shuffle: CombinedShuffle,
    spec: CombineSpec,
    counters: FetchCounters,
    combining: CombiningExecutors)
    extends ShuffleWriter[K, V] {

  private[this] val (role, round) =
    if (context.stageAttemptNumber() == 0 && context.attemptNumber() == 0) {
      shuffle.nextMap(context.partitionId())
    } else (Verdict.Write, 0)

  /** What the task keeps to fold: from the start, or once its judging found folding pays. */
  private[this] var records: Option[shuffle.spec.Task] =
    if (role == Verdict.Fold) Some(shuffle.newTaskRecords()) else None

  /** A judging task's sample, until its judgement is made (at its commit, or early). */
  private[this] var sample: Option[TaskSample] =
    if (role == Verdict.Judge) Some(new TaskSample) else None

  override def write(in: Iterator[Product2[K, V]]): Unit =
    writer.write(if (role == Verdict.Write) in else new NotKept(in))

  /**
   * The records of `in` the task does not keep to fold. Once one does not fit, the rest go to
   * the file too. A judging task samples its keys and, where the map outputs judged before it on
   * the executor left a sample, looks them up as they come: where [[Verdict.EarlyKeys]] of them
   * show that folding pays, the task keeps its records from then on.
   */
  private final class NotKept(in: Iterator[Product2[K, V]]) extends Iterator[Product2[K, V]] {
    private[this] var keeping = true
    private[this] var pending: Product2[K, V] = _
    private[this] val seen = if (sample.isDefined) shuffle.sampleOf(round) else None
    private[this] var probed, met = 0L

    override def hasNext: Boolean = {
      while (pending == null && in.hasNext) {
        val record = in.next()
        records match {
          case Some(kept) =>
            if (!keeping || !kept.keep(
                partitioner.getPartition(record._1),
                record.asInstanceOf[Product2[Any, Any]])) {
              keeping = false
              pending = record
            }
          case None =>
            sample.foreach(judge(_, spec.keyHash(record._1)))
            pending = record
        }
      }
      pending != null
    }

    private def judge(task: TaskSample, hash: Int): Unit =
      if (task.offer(hash)) seen.foreach { case (hashes, level) =>
        if (KeySample.inLevel(hash, level)) {
          probed += 1
          if (hashes.contains(hash)) met += 1
          if (probed == Verdict.EarlyKeys && shuffle.foldEarly(round, probed, met)) {
            sample = None
            records = Some(shuffle.newTaskRecords())
          }
        }
      }

    override def next(): Product2[K, V] = {
      if (!hasNext) throw new NoSuchElementException
      val record = pending
      pending = null
      record
    }
  }

  override def stop(success: Boolean): Option[MapStatus] =
    try {
      val status = writer.stop(success)
      if (success && status.isDefined) {
        sample.foreach(shuffle.judge(round, _))
        records match {
          case Some(kept) if kept.partitions.hasNext =>
            val fold = shuffle.fold(mapId, kept)
            counters.combine.folded(
              fold.partitionsOverflowed,
              fold.rows,
              fold.rowsMerged,
              fold.newBytes,
              fold.bytes)
            counters.combine.combining += executorId
            counters.observe(FetchCounters.CombineMemoryPeak, shuffle.memoryPeak)
            combining.add(executorId -> fold.newBytes)
          case _ => counters.combine.add(CombineCounters.MapsNotFolded, 1)
        }
      }
      status
    } finally records.foreach(_.release())

  override def getPartitionLengths(): Array[Long] = writer.getPartitionLengths()
}
