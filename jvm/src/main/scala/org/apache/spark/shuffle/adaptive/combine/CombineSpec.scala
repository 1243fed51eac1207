package org.apache.spark.shuffle.adaptive.combine

import org.apache.spark.serializer.SerializationStream

/**
 * How the records of one shuffle combine: two records of one key into one, as the reduce side
 * would combine them (local reduction, see [[CombineStore]]). Decided on the driver when the
 * shuffle is registered (from its dependency) and carried to executors by its handle.
 */
private[spark] trait CombineSpec extends Serializable {

  /** "sql" or "rdd", for logs. */
  def kind: String

  /**
   * What one thread combines with: it holds the (generated) code and scratch rows, so each
   * thread makes its own, once per shuffle. `compiled`: it generates code for its expressions
   * (which costs each executor more than a few folds take); otherwise it interprets them.
   */
  def newEngine(compiled: Boolean): CombineEngine
}

/**
 * The records of one map task, kept by reduce partition as the task writes them, in `budget`:
 * what a map task folds into its executor's combined records once it commits.
 */
private[spark] trait TaskRecords {

  /** Keeps `record` of `partition`; false (and keeps nothing more) once the budget is spent. */
  def add(partition: Int, record: Product2[Any, Any]): Boolean

  /** Rows kept of `partition`. */
  def rows(partition: Int): Int

  /** Bytes kept of `partition`, as kept (serialized where the engine keeps bytes). */
  def bytes(partition: Int): Long

  /** The partitions with rows, in increasing order. */
  def partitions: Iterator[Int]

  /** Gives back what the records hold. */
  def release(): Unit
}

/**
 * The combined records of one reduce partition on one executor, one record per key: made,
 * folded into and written by a [[CombineEngine]]; callers hold the partition's lock.
 */
private[spark] trait CombinedRecords {

  /** Distinct keys held. */
  def rows: Long

  /** Bytes of memory held (reserved in the store's memory). */
  def bytes: Long

  /** Gives the memory back; nothing may be folded in or written after. */
  def free(): Unit
}

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
   * combined, as its file holds them) and how many of those met a key held already.
   */
  def fold(task: TaskRecords, partition: Int, into: CombinedRecords): FoldCount

  /** Writes each combined record of `records` to `out`, as the map side writes records. */
  def write(partition: Int, records: CombinedRecords, out: SerializationStream): Unit
}

/** What folding one map output's records of a partition did (see [[CombineEngine.fold]]). */
private[spark] final case class FoldCount(rows: Long, merged: Long)

/**
 * Memory a task's records or a partition's combined records take from the executor's combine
 * memory ([[CombineStore]]): reserved before it is used, given back when it is freed.
 */
private[spark] trait Budget {
  def reserve(bytes: Long): Boolean
  def release(bytes: Long): Unit
}

/**
 * Combined records held as objects, one entry per key; `held` is what the engine estimates
 * they take, reserved in `budget`.
 */
private[spark] final class CombinedObjects[K, V](budget: Budget) extends CombinedRecords {
  val map = new java.util.HashMap[K, V]
  var held = 0L
  override def rows: Long = map.size.toLong
  override def bytes: Long = held
  override def free(): Unit = {
    budget.release(held)
    held = 0
    map.clear()
  }
}
