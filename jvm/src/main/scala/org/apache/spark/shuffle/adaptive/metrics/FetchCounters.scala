package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

import org.apache.spark.shuffle.adaptive.combine.CombineCounters

/**
 * What the plugin's fetcher did, for one reduce task or, merged, for an executor or the
 * application. Updated by the task thread only; merged on the driver.
 *
 * Counters (the names Python sees, see [[toMap]]):
 *  - `reduce_tasks`: fetchers that ran (one per reduce task);
 *  - `bytes_by_source` / `blocks_by_source`: bytes and blocks served per executor id they came
 *    from (this executor's own blocks included);
 *  - `bytes_by_transport` / `blocks_by_transport`: the same per path: `local` (read from this
 *    executor's files), `host-local` (read from the files of another executor on this host),
 *    `netty` or `ucx` (one-sided reads of the serving executor's memory);
 *  - `bytes_from_stores` / `blocks_from_stores` (mode=push): those read from a shuffle
 *    store's memory, this executor's or another's, rather than from a map-output file (in
 *    mode=push: out of merged chunks); `bytes_from_stores_by_source` splits the bytes by the
 *    store's executor;
 *  - `chunks_read` (mode=push): merged reads, each one request or local read of a chunk or of
 *    a partition range's chunks; `chunk_fallbacks`: merged reads that could not be fetched,
 *    whose blocks were read from their map outputs instead; `chunks_at_peers`: chunks planned
 *    at a peer, where their owner had handed them off (remote-memory spill);
 *    `chunks_in_ranges`: chunks planned as part of a partition range's one request;
 *    `chunks_one_sided`: chunks planned as one-sided reads (UCX) of their holder's memory;
 *  - `bytes_crossed_twice`: bytes read from another executor's store that had come there from
 *    a third (pushed or spilled): they crossed the network after the map task and again now;
 *  - `stored_reduce_tasks` / `stored_reduce_tasks_on_owner`: tasks that read from stores, and
 *    those of them that ran on the executor whose store held most of the bytes they read from
 *    stores (in mode=push, their partition's owner);
 *  - `requests`: requests sent to other executors; `requests_by_transport` splits them by the
 *    path they took first; `blocks_per_request` = blocks not local / requests;
 *  - `transport_fallbacks`: blocks their first path could not serve (UCX: no region for the
 *    map output; host-local: files not readable) that went to the next transport instead;
 *  - `direct_memory_deferrals`: blocks deferred because Netty ran out of direct memory;
 *  - `corrupt_refetches`: blocks fetched a second time after a corrupt first copy;
 *  - `fetch_wait_ms`: time tasks blocked waiting for remote blocks (as Spark's fetch wait time);
 *  - `peak_bytes_in_flight`: the largest number of bytes one task had requested and not yet
 *    consumed (in flight plus fetched but unread);
 *  - `buffered_byte_ms` / `fetch_ms`: bytes in flight or unread integrated over each task's
 *    fetch time, and that time; their ratio `mean_buffered_bytes` is the time-averaged buffer;
 *  - `wait_ms_by_source` / `mean_wait_ms_by_source`: time tasks blocked for each remote
 *    executor's blocks, in total and per block;
 *  - `observed_rate_by_source`: the rate (bytes per second while requests were outstanding)
 *    each task's executor had observed from the remote executor when the task ended, a mean
 *    weighted by the bytes the tasks read from it: what the critical fetch order ranks by;
 *  - `host_by_source`: the host of each executor blocks came from;
 *  - `elastic_limit_min` / `elastic_limit_max` / `elastic_limit_mean` / `elastic_limit_changes`:
 *    the smallest and largest in-flight limit any task had, the limit averaged over fetch time,
 *    and how often limits changed (the max is the hard limit; min = max when elastic is off);
 *  - `tasks_by_remote_sources`: how many tasks read blocks from n distinct remote executors, keyed
 *    by n (what source selection had to choose from; 0 for tasks that read only local blocks);
 *  - `combine`: what local reduction did, map tasks' folds included ([[CombineCounters]]).
 */
private[spark] final class FetchCounters extends Serializable {
  var reduceTasks = 0L
  val bytesBySource: mutable.Map[String, Long] = mutable.TreeMap.empty
  val blocksBySource: mutable.Map[String, Long] = mutable.TreeMap.empty
  val bytesByTransport: mutable.Map[String, Long] = mutable.TreeMap.empty
  val blocksByTransport: mutable.Map[String, Long] = mutable.TreeMap.empty
  var bytesFromStores = 0L
  var blocksFromStores = 0L
  val bytesFromStoresBySource: mutable.Map[String, Long] = mutable.TreeMap.empty
  var bytesCrossedTwice = 0L
  var storedReduceTasks = 0L
  var storedReduceTasksOnOwner = 0L
  var chunksRead = 0L
  var chunkFallbacks = 0L
  var chunksAtPeers = 0L
  var chunksInRanges = 0L
  var chunksOneSided = 0L
  var requests = 0L
  val requestsByTransport: mutable.Map[String, Long] = mutable.TreeMap.empty
  var transportFallbacks = 0L
  var directMemoryDeferrals = 0L
  var corruptRefetches = 0L
  var fetchWaitMs = 0L
  var peakBytesInFlight = 0L
  var bufferedByteMs = 0.0
  var fetchMs = 0.0
  val waitMsBySource: mutable.Map[String, Double] = mutable.TreeMap.empty

  /** Bytes read from the source × the rate observed from it (over the bytes: a weighted mean). */
  val rateBytesBySource: mutable.Map[String, Double] = mutable.TreeMap.empty
  val hostBySource: mutable.Map[String, String] = mutable.TreeMap.empty

  /** 0 until a task reported its limit. */
  var limitMin = 0L
  var limitMax = 0L
  var limitByteMs = 0.0
  var limitChanges = 0L
  val tasksByRemoteSources: mutable.Map[String, Long] = mutable.TreeMap.empty

  /**
   * One task's counters only (merged counters keep -1): the reduce partitions it read,
   * `[startPartition, endPartition)`, for the skew report's exact partition sizes.
   */
  var startPartition = -1
  var endPartition = -1

  /** What local reduction did: map tasks' folds and reduce tasks' combined reads. */
  val combine = new CombineCounters

  def isZero: Boolean = reduceTasks == 0 && requests == 0 && bytesBySource.isEmpty &&
    corruptRefetches == 0 && transportFallbacks == 0 && directMemoryDeferrals == 0 &&
    fetchWaitMs == 0 && peakBytesInFlight == 0 && fetchMs == 0 &&
    tasksByRemoteSources.isEmpty && combine.isZero

  def served(source: String, transport: String, bytes: Long): Unit = {
    add(bytesBySource, source, bytes)
    add(blocksBySource, source, 1)
    add(bytesByTransport, transport, bytes)
    add(blocksByTransport, transport, 1)
  }

  def servedFromStore(source: String, bytes: Long, crossedTwice: Boolean): Unit = {
    bytesFromStores += bytes
    blocksFromStores += 1
    add(bytesFromStoresBySource, source, bytes)
    if (crossedTwice) bytesCrossedTwice += bytes
  }

  def requested(path: String): Unit = {
    requests += 1
    add(requestsByTransport, path, 1)
  }

  def waited(source: String, millis: Double): Unit =
    waitMsBySource(source) = waitMsBySource.getOrElse(source, 0.0) + millis

  /** The task's executor observes `bytesPerSecond` from the remote `source` as the task ends. */
  def rateObserved(source: String, bytesPerSecond: Double): Unit =
    rateBytesBySource(source) = rateBytesBySource
      .getOrElse(source, 0.0) + bytesBySource.getOrElse(source, 0L) * bytesPerSecond

  /** Bytes per second observed from each remote source (see [[rateObserved]]). */
  def observedRateBySource: Map[String, Double] = rateBytesBySource.iterator.collect {
    case (source, rateBytes) if bytesBySource.getOrElse(source, 0L) > 0 =>
      source -> rateBytes / bytesBySource(source)
  }.toMap

  def limitObserved(min: Long, max: Long, changes: Long): Unit = {
    limitMin = if (limitMin == 0) min else math.min(limitMin, min)
    limitMax = math.max(limitMax, max)
    limitChanges += changes
  }

  /** A task on `self` ends (these counters are its own). */
  def taskRead(self: String): Unit = {
    add(tasksByRemoteSources, bytesBySource.keysIterator.count(_ != self).toString, 1)
    if (bytesFromStoresBySource.nonEmpty) {
      storedReduceTasks += 1
      val owner = bytesFromStoresBySource.maxBy { case (id, bytes) => (bytes, id == self) }._1
      if (owner == self) storedReduceTasksOnOwner += 1
    }
  }

  def merge(other: FetchCounters): Unit = {
    reduceTasks += other.reduceTasks
    other.bytesBySource.foreach { case (k, v) => add(bytesBySource, k, v) }
    other.blocksBySource.foreach { case (k, v) => add(blocksBySource, k, v) }
    other.bytesByTransport.foreach { case (k, v) => add(bytesByTransport, k, v) }
    other.blocksByTransport.foreach { case (k, v) => add(blocksByTransport, k, v) }
    bytesFromStores += other.bytesFromStores
    blocksFromStores += other.blocksFromStores
    other.bytesFromStoresBySource.foreach { case (k, v) => add(bytesFromStoresBySource, k, v) }
    bytesCrossedTwice += other.bytesCrossedTwice
    storedReduceTasks += other.storedReduceTasks
    storedReduceTasksOnOwner += other.storedReduceTasksOnOwner
    chunksRead += other.chunksRead
    chunkFallbacks += other.chunkFallbacks
    chunksAtPeers += other.chunksAtPeers
    chunksInRanges += other.chunksInRanges
    chunksOneSided += other.chunksOneSided
    requests += other.requests
    other.requestsByTransport.foreach { case (k, v) => add(requestsByTransport, k, v) }
    transportFallbacks += other.transportFallbacks
    directMemoryDeferrals += other.directMemoryDeferrals
    corruptRefetches += other.corruptRefetches
    fetchWaitMs += other.fetchWaitMs
    peakBytesInFlight = math.max(peakBytesInFlight, other.peakBytesInFlight)
    bufferedByteMs += other.bufferedByteMs
    fetchMs += other.fetchMs
    other.waitMsBySource.foreach { case (k, v) =>
      waitMsBySource(k) = waitMsBySource.getOrElse(k, 0.0) + v
    }
    other.rateBytesBySource.foreach { case (k, v) =>
      rateBytesBySource(k) = rateBytesBySource.getOrElse(k, 0.0) + v
    }
    hostBySource ++= other.hostBySource
    if (other.limitMin != 0) limitObserved(other.limitMin, other.limitMax, other.limitChanges)
    limitByteMs += other.limitByteMs
    other.tasksByRemoteSources.foreach { case (k, v) => add(tasksByRemoteSources, k, v) }
    combine.merge(other.combine)
  }

  def copy(): FetchCounters = {
    val c = new FetchCounters
    c.merge(this)
    c
  }

  private def add(map: mutable.Map[String, Long], key: String, v: Long): Unit =
    map(key) = map.getOrElse(key, 0L) + v

  /** The counters as Python receives them (snake_case keys, plain values). */
  def toMap: Map[String, Any] = {
    val remoteBlocks = blocksByTransport.iterator.filter(_._1 != FetchCounters.Local).map(_._2).sum
    Map(
      "reduce_tasks" -> reduceTasks,
      "bytes_by_source" -> bytesBySource.toMap,
      "blocks_by_source" -> blocksBySource.toMap,
      "bytes_by_transport" -> bytesByTransport.toMap,
      "blocks_by_transport" -> blocksByTransport.toMap,
      "bytes_from_stores" -> bytesFromStores,
      "blocks_from_stores" -> blocksFromStores,
      "bytes_from_stores_by_source" -> bytesFromStoresBySource.toMap,
      "bytes_crossed_twice" -> bytesCrossedTwice,
      "stored_reduce_tasks" -> storedReduceTasks,
      "stored_reduce_tasks_on_owner" -> storedReduceTasksOnOwner,
      "chunks_read" -> chunksRead,
      "chunk_fallbacks" -> chunkFallbacks,
      "chunks_at_peers" -> chunksAtPeers,
      "chunks_in_ranges" -> chunksInRanges,
      "chunks_one_sided" -> chunksOneSided,
      "requests" -> requests,
      "requests_by_transport" -> requestsByTransport.toMap,
      "transport_fallbacks" -> transportFallbacks,
      "direct_memory_deferrals" -> directMemoryDeferrals,
      "blocks_per_request" -> (if (requests == 0) 0.0 else remoteBlocks.toDouble / requests),
      "corrupt_refetches" -> corruptRefetches,
      "fetch_wait_ms" -> fetchWaitMs,
      "peak_bytes_in_flight" -> peakBytesInFlight,
      "buffered_byte_ms" -> bufferedByteMs,
      "fetch_ms" -> fetchMs,
      "mean_buffered_bytes" -> (if (fetchMs == 0) 0.0 else bufferedByteMs / fetchMs),
      "wait_ms_by_source" -> waitMsBySource.toMap,
      "mean_wait_ms_by_source" -> waitMsBySource.iterator.map { case (source, ms) =>
        source -> ms / math.max(1L, blocksBySource.getOrElse(source, 1L))
      }.toMap,
      "observed_rate_by_source" -> observedRateBySource,
      "host_by_source" -> hostBySource.toMap,
      "elastic_limit_min" -> limitMin,
      "elastic_limit_max" -> limitMax,
      "elastic_limit_mean" -> (if (fetchMs == 0) 0.0 else limitByteMs / fetchMs),
      "elastic_limit_changes" -> limitChanges,
      "tasks_by_remote_sources" -> tasksByRemoteSources.toMap,
      "combine" -> combine.toMap)
  }

  override def toString: String = {
    val bytes = bytesByTransport.map { case (k, v) => s"$k=$v" }.mkString(",")
    s"tasks=$reduceTasks bytes[$bytes] requests=$requests wait=${fetchWaitMs}ms " +
      s"peakInFlight=$peakBytesInFlight limit=[$limitMin,$limitMax] changes=$limitChanges"
  }
}

private[spark] object FetchCounters {

  /** The transport name of blocks read from the reduce task's own executor. */
  val Local = "local"
}
