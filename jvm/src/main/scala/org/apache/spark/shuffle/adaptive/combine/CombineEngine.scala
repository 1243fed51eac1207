package org.apache.spark.shuffle.adaptive.combine

import org.apache.spark.serializer.SerializationStream

/** The code that combines records of one shuffle, used by one thread at a time. */
private[spark] trait CombineEngine {

  def newTaskRecords(budget: Budget, numPartitions: Int): TaskRecords

  def newCombined(budget: Budget): CombinedRecords

  /**
   * The most bytes folding `partition`'s rows of `task` into `into` can take, were every row a
   * new key: what is reserved before it starts, so that a fold never stops half way.
   */
  def worstCase(task: TaskRecords, partition: Int, into: CombinedRecords): Long

  /**
   * Folds every row of `partition` kept by `task` into `into`, within what [[worstCase]]
   * reserved; answers how many records the map output holds of the partition (its own records
   * combined, as its file would hold them), how many of those met a key held already, and the
   * bytes of those that did not (each a new record, which its segment will hold).
   */
  def fold(task: TaskRecords, partition: Int, into: CombinedRecords): FoldCount

  /** Writes each combined record of `records` to `out`, as the map side writes records. */
  def write(partition: Int, records: CombinedRecords, out: SerializationStream): Unit

  /**
   * Writes the records of `partition` that `task` kept to `out`, as its map output would have
   * written them: a partition there was no room to fold is a segment of its own.
   */
  def writeKept(task: TaskRecords, partition: Int, out: SerializationStream): Unit
}

/** What folding one map output's records of a partition did (see [[CombineEngine.fold]]). */
private[spark] final case class FoldCount(rows: Long, merged: Long, newBytes: Long)
