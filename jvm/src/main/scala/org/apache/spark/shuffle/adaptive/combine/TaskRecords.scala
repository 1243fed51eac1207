package org.apache.spark.shuffle.adaptive.combine

/**
 * The records one map task keeps, by reduce partition, to fold into its executor's combined
 * records once its map output is committed instead of writing them to the file: what a map task
 * folds ([[CombinedShuffle.fold]]). Their memory comes from a [[Budget]].
 */
private[combine] trait TaskRecords {

  /**
   * Keeps `record` of `partition`; false, keeping nothing, when it does not fit in the budget
   * (the record is then written to the map output's file).
   */
  def keep(partition: Int, record: Product2[Any, Any]): Boolean

  /** Records kept of `partition`. */
  def rows(partition: Int): Int

  /** Bytes kept of `partition`, as kept (serialized where the engine keeps bytes). */
  def bytes(partition: Int): Long

  /** The partitions with records, in increasing order. */
  def partitions: Iterator[Int]

  /** Gives back what the records hold; they may not be used after. */
  def release(): Unit
}
