package org.apache.spark.shuffle.adaptive.combine

import org.apache.spark.serializer.SerializationStream

/**
 * The code that combines records of one shuffle, used by one thread at a time: it keeps a map
 * task's records as `T` and combines them into records `C`, the types its [[CombineSpec]] names,
 * so that no engine is handed records another kind made.
 */
private[combine] trait CombineEngine[T <: TaskRecords, C <: CombinedRecords] {

  def newTaskRecords(budget: Budget, numPartitions: Int): T

  /** New combined records, which reserve what they grow by in `budget` as they grow. */
  def newCombined(budget: Budget): C

  /**
   * Folds the records of `partition` kept by `task`, from the `from`th on in the order kept, into
   * `into`, for as long as `into` finds room to grow: answers how many records of the map output
   * it folded (its own records combined, as its file would hold them), how many of those met a
   * key held already, the bytes of those that did not (each a new record, which its segment will
   * hold), and the index of the first record it did not fold (all of them: `task.rows`).
   */
  def fold(task: T, partition: Int, from: Int, into: C): FoldCount

  /** Writes each combined record of `records` to `out`, as the map side writes records. */
  def write(partition: Int, records: C, out: SerializationStream): Unit

  /**
   * Writes the records of `partition` that `task` kept, from the `from`th on, to `out`, as its
   * map output would have written them: what found no room to fold is a segment of its own.
   */
  def writeKept(task: T, partition: Int, from: Int, out: SerializationStream): Unit
}

/** What folding a map output's records of a partition did (see [[CombineEngine.fold]]). */
private[combine] final case class FoldCount(rows: Long, merged: Long, newBytes: Long, next: Int)
