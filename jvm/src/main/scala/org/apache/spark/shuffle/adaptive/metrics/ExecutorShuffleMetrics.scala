package org.apache.spark.shuffle.adaptive.metrics

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.TaskContext

/**
 * One executor's counters in its metrics system ([[PluginMetricsSource]]): `fetch.*`, the
 * [[FetchCounters]] of its finished reduce tasks merged as the driver merges them per executor
 * (successful tasks only, as Spark reports their accumulators), and `store.*`, its shuffle
 * store's usage (mode=push).
 */
private[spark] final class ExecutorShuffleMetrics {
  val source = new PluginMetricsSource
  private[this] val merged = new FetchCounters

  /** Counters of running tasks that will be merged when their task ends (each once). */
  private[this] val reading = ConcurrentHashMap.newKeySet[FetchCounters]()

  /** The task of `context` fills `counters`: merge them once it has succeeded. */
  def taskReads(context: TaskContext, counters: FetchCounters): Unit =
    if (reading.add(counters)) {
      context.addTaskCompletionListener[Unit] { task =>
        reading.remove(counters)
        if (!task.isFailed()) {
          source.update("fetch.", synchronized { merged.merge(counters); merged.toMap })
        }
      }
    }

  def storeUsage(
      capacity: Long,
      used: Long,
      direct: Long,
      highWater: Long,
      pushQueued: Long,
      pushQueueHighWater: Long,
      pushRefused: Long,
      pushLate: Long,
      mergedToDisk: Long,
      releasedAfterRead: Long,
      handedOffToPeers: Long,
      hostedForPeers: Long): Unit =
    source.update(
      "store.",
      Map(
        "capacity" -> capacity,
        "used" -> used,
        "direct" -> direct,
        "high_water" -> highWater,
        "push_queued" -> pushQueued,
        "push_queue_high_water" -> pushQueueHighWater,
        "push_refused" -> pushRefused,
        "push_late" -> pushLate,
        "merged_to_disk" -> mergedToDisk,
        "released_after_read" -> releasedAfterRead,
        "handed_off_to_peers" -> handedOffToPeers,
        "hosted_for_peers" -> hostedForPeers))
}
