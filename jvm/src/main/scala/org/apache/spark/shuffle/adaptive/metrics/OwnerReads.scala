package org.apache.spark.shuffle.adaptive.metrics

/**
 * mode=push: where one shuffle's reduce tasks ran against where what they read was merged, from
 * the [[FetchCounters]] of its finished reduce tasks: how many tasks read merged chunks and how
 * many of those ran at the owner of most of them, and how many of the bytes read were merged
 * (`bytes_from_chunks`) and held by the reading task's own executor (`bytes_at_owner`).
 */
private[metrics] final class OwnerReads {
  private[this] var tasks = 0L
  private[this] var tasksReadingChunks = 0L
  private[this] var tasksAtOwner = 0L
  private[this] var bytes = 0L
  private[this] var bytesFromChunks = 0L
  private[this] var bytesAtOwner = 0L

  def add(counters: FetchCounters): Unit = {
    tasks += counters(FetchCounters.ReduceTasks)
    tasksReadingChunks += counters(FetchCounters.StoredReduceTasks)
    tasksAtOwner += counters(FetchCounters.StoredReduceTasksOnOwner)
    bytes += counters(FetchCounters.BytesByTransport).values.sum
    bytesFromChunks += counters(FetchCounters.BytesFromStores)
    bytesAtOwner += counters(FetchCounters.BytesAtOwner)
  }

  def readChunks: Boolean = tasksReadingChunks > 0

  def toMap: Map[String, Any] = Map(
    "reduce_tasks" -> tasks,
    "reduce_tasks_reading_chunks" -> tasksReadingChunks,
    "reduce_tasks_at_owner" -> tasksAtOwner,
    "bytes_read" -> bytes,
    "bytes_from_chunks" -> bytesFromChunks,
    "bytes_at_owner" -> bytesAtOwner)
}
