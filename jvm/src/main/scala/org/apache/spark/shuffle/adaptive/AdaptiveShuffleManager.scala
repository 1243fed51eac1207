package org.apache.spark.shuffle.adaptive

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicBoolean

import org.apache.spark.{ShuffleDependency, SparkConf, SparkContext, SparkEnv, TaskContext}
import org.apache.spark.internal.Logging
import org.apache.spark.rpc.RpcEndpointRef
import org.apache.spark.shuffle._
import org.apache.spark.shuffle.adaptive.compat.{ServingShuffleManager, SparkCompat}
import org.apache.spark.shuffle.adaptive.fetch.{AdaptiveShuffleReader, BatchFetch, BlockManagerLocalBlocks, ChunkPart, DirectMemoryBackoff, FetchSettings, ShuffleBlockFetcher}
import org.apache.spark.shuffle.adaptive.flow.PeerTraffic
import org.apache.spark.internal.config.{SHUFFLE_IO_PLUGIN_CLASS, SHUFFLE_SERVICE_ENABLED}
import org.apache.spark.shuffle.adaptive.metrics.{ExecutorShuffleMetrics, FetchCounters, FetchMetricsAccumulator, FetchMetricsListener, PluginMetricsSource, ShuffleReadReporter}
import org.apache.spark.shuffle.adaptive.push.{MergedReads, MergedTransport, MergeStore, OwnerTable, PushDriver, PushExecutor, PushQueue, ShuffleMergeSummary}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{MODE, Mode, PUSH_RELIABILITY, ReliableDataIO, Reliability, TRANSPORT, Transport}
import org.apache.spark.shuffle.adaptive.transport.{MapOutputServing, ServingShuffleWriter, TransportFactory}
import org.apache.spark.shuffle.adaptive.transport.ucx.UcxRegistry
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.storage.{BlockId, BlockManagerId}
import org.apache.spark.util.RpcUtils

/**
 * The plugin's entry point: `spark.shuffle.manager=org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager`.
 *
 * Which path runs when:
 *  - '''Map side''' (`registerShuffle`, `getWriter`, `shuffleBlockResolver`, `unregisterShuffle`):
 *    Spark's sort shuffle, unchanged. It picks the bypass-merge writer (few partitions, no
 *    map-side combine), the serialized writer (relocatable serializer, no map-side combine) or
 *    the sort writer, and writes one data, index and checksum file per map task. MapStatus
 *    sizes, checksums, I/O encryption, block migration and cleanup are therefore Spark's own.
 *    With `spark.shuffle.adaptive.transport` = `ucx` (or `auto`, where UCX starts), each
 *    committed data file is also memory-mapped and registered with UCX before the task returns
 *    its MapStatus ([[transport.ucx.UcxMapOutputServing]]; regions published to the driver's
 *    [[transport.ucx.UcxRegistry]], dropped on `unregisterShuffle` and executor stop).
 *    With `spark.shuffle.adaptive.mode=push` (shuffle-on-write), the map task only queues its output; the executor's
 *    pusher ([[push.PushMapOutputServing]]) sends it in the background while later map tasks
 *    run to the owners of its partitions ([[push.OwnerTable]], in the handle), which append
 *    each block to its partition's merged chunks ([[push.MergeStore]]; a full owner hands chunks
 *    to peers with room, [[push.ChunkHandOff]], then moves them to disk); no driver message is
 *    involved. Reduce tasks are not moved to their partition's owner:
 *    Spark asks only its MapOutputTrackerMaster where a reduce task should run, which prefers
 *    the hosts of merged blocks of push-based shuffle (YARN with the external shuffle service
 *    and Spark's own SortShuffleManager only) or of the map outputs' MapStatus locations (which
 *    must stay the map tasks' executors, whose files are the source of truth); neither is a
 *    plugin's to set. How often reduce tasks still ran on the owner is counted.
 *  - '''Reduce side''' (`getReader`): [[fetch.AdaptiveShuffleReader]] over
 *    [[fetch.ShuffleBlockFetcher]]. Blocks of this executor are read from its files; blocks of
 *    other executors go through the [[transport.BlockTransport]] chain that
 *    [[transport.TransportFactory]] builds, each step falling back to the next block by block:
 *    with UCX on, blocks of executors that serve through UCX are read by one-sided reads of
 *    their memory ([[transport.ucx.UcxBlockTransport]]); those of executors on the same
 *    host are read from their files by [[transport.HostLocalTransport]] when Spark reads them so
 *    (`spark.shuffle.readHostLocalDisk`, on by default, and not the old fetch protocol), falling
 *    back to the network block by block; the rest go through [[transport.NettyBlockTransport]]
 *    (Spark's BlockStoreClient, hence `spark.authenticate`, retries and the external shuffle
 *    service). A fetch refused for want of Netty direct memory is deferred and retried
 *    (`spark.shuffle.maxAttemptsOnNettyOOM`). Which executor is asked next, and when, is
 *    `spark.shuffle.adaptive.fetch.order`:
 *    `adaptive` (default: [[fetch.AdaptiveScheduler]], executor-wide load and responsiveness,
 *    circular start, in-flight increment), `naive` ([[fetch.NaiveScheduler]], Spark's random
 *    order) or `pairwise` ([[fetch.PairwiseScheduler]]); the amount in flight is bounded by each
 *    task's [[flow.ElasticLimit]] (`fetch.elastic.enabled`). Map ranges (AQE skew splits, local
 *    shuffle reader) select the map outputs.
 *    AQE's coalesced reads of contiguous partitions fetch one batch block per map output under
 *    Spark's conditions ([[fetch.BatchFetch]]). In mode=push the task asks
 *    the owners of its partitions for their layout and reads each merged chunk in one request
 *    ([[push.MergedReads]], [[push.MergedTransport]]), the blocks not merged from their files.
 *  - Spark's push-based shuffle never runs: Spark enables it only for its own SortShuffleManager.
 *  - '''Metrics''': each shuffle's [[AdaptiveShuffleHandle]] carries a
 *    [[metrics.FetchMetricsAccumulator]]; every reduce task fills its own copy, and the driver's
 *    [[metrics.FetchMetricsListener]] (registered with the first shuffle) adds them up per
 *    executor and for the application.
 */
private[spark] class AdaptiveShuffleManager(conf: SparkConf)
    extends ServingShuffleManager
    with Logging {

  private[this] val mode = conf.get(MODE)

  require(
    !(mode != Mode.Pull && conf.get(SHUFFLE_SERVICE_ENABLED)),
    s"${MODE.key}=$mode needs " +
      s"${SHUFFLE_SERVICE_ENABLED.key}=false: the external shuffle service serves files only")

  require(
    conf.get(PUSH_RELIABILITY) == Reliability.None || mode == Mode.Push && conf.get(
      SHUFFLE_IO_PLUGIN_CLASS) == ReliableDataIO,
    s"${PUSH_RELIABILITY.key}=${Reliability.Replicated} needs ${MODE.key}=${Mode.Push} and " +
      s"${SHUFFLE_IO_PLUGIN_CLASS.key}=$ReliableDataIO (pyspark_shuffle.configure sets it), " +
      s"which tells Spark that a lost executor's map outputs are held elsewhere; got " +
      s"${MODE.key}=$mode and ${SHUFFLE_IO_PLUGIN_CLASS.key}=${conf.get(SHUFFLE_IO_PLUGIN_CLASS)}; " +
      s"allowed values of ${PUSH_RELIABILITY.key} without them: ${Reliability.None}")

  private[this] val sortShuffle = new SortShuffleManager(conf)
  private[this] lazy val files = mapOutputFiles(sortShuffle.shuffleBlockResolver)

  /**
   * What serves this executor's map-output files: Spark's resolver. A subclass may wrap it (a
   * deliberately slow node, [[testing.SlowServingAdaptiveShuffleManager]]).
   */
  protected def mapOutputFiles(spark: IndexShuffleBlockResolver): IndexShuffleBlockResolver = spark

  /** Executors (and a local-mode driver) in mode=push. */
  private[this] lazy val pushExecutor =
    if (mode == Mode.Push)
      Some(new PushExecutor(conf, files, executorMetrics, () => transports.remoteMemory))
    else None

  private[this] lazy val servingResolver =
    pushExecutor.map(_.resolver).getOrElse(files)

  /** Driver only: the plugin's counters in Spark's metrics system, and their source. */
  private[this] val driverMetrics = new PluginMetricsSource

  /** Driver only: the plugin's counters of finished tasks. */
  private[spark] val fetchMetrics = new FetchMetricsListener(driverMetrics)

  /**
   * Executors only (a local-mode driver's counters are the driver's): this executor's counters
   * in its metrics system, registered with the first task that needs them.
   */
  private[this] lazy val executorMetrics: Option[ExecutorShuffleMetrics] =
    Option(SparkEnv.get).filter(_.executorId != SparkContext.DRIVER_IDENTIFIER).map { env =>
      val metrics = new ExecutorShuffleMetrics
      env.metricsSystem.registerSource(metrics.source)
      metrics
    }
  private[this] val listening = new AtomicBoolean(false)
  private[this] val transports = new TransportFactory(conf)

  /** Driver only: each shuffle's reduce partitions. */
  private[this] val reducers = new ConcurrentHashMap[Int, Int]

  /** Driver only: what each shuffle's reduce stage read, for the skew report. */
  @volatile private[spark] var readReports: Option[ShuffleReadReporter] = None

  /** Driver only, in mode=push: merge summaries and owner placement. */
  @volatile private[this] var pushDriver: Option[PushDriver] = None

  /** Driver only, where transports other than Netty may run: the UCX registry. */
  @volatile private[this] var ucxRegistry: Option[RpcEndpointRef] = None

  /** Called on the driver. */
  override def registerShuffle[K, V, C](
      shuffleId: Int,
      dependency: ShuffleDependency[K, V, C]): ShuffleHandle = {
    val sc = dependency.rdd.context
    if (listening.compareAndSet(false, true)) {
      sc.addSparkListener(fetchMetrics)
      sc.env.metricsSystem.registerSource(driverMetrics)
      val reporter = new ShuffleReadReporter(
        id => SparkCompat.partitionBytes(id, reducers.getOrDefault(id, 0)),
        sc.listenerBus.post)
      sc.addSparkListener(reporter)
      readReports = Some(reporter)
      if (conf.get(TRANSPORT) != Transport.Netty) ucxRegistry = Some(UcxRegistry.start(sc))
      if (mode == Mode.Push) {
        pushDriver = Some(
          new PushDriver(
            sc,
            () => taskExecutors(sc),
            id => SparkCompat.partitionBytes(id, reducers.getOrDefault(id, 0)).sum,
            s => driverMetrics.update("push.", Map(s.shuffleId.toString -> s.toMap))))
      }
    }
    val accumulator = new FetchMetricsAccumulator
    sc.register(accumulator, FetchMetricsAccumulator.NamePrefix + shuffleId)
    val numPartitions = dependency.partitioner.numPartitions
    reducers.put(shuffleId, numPartitions)
    val handle = new AdaptiveShuffleHandle(
      shuffleId,
      dependency,
      sortShuffle.registerShuffle(shuffleId, dependency),
      accumulator,
      dependency.rdd.partitions.length,
      () =>
        if (mode == Mode.Push) Some(OwnerTable.uniform(numPartitions, taskExecutors(sc))) else None,
      () => taskExecutors(sc).map(_.executorId).toSet)
    pushDriver.foreach(
      _.register(
        shuffleId,
        handle.numMaps,
        numPartitions,
        () => handle.placedVersions,
        handle.addOwnerVersion))
    handle
  }

  /** The block managers of the executors that run tasks (the driver's, in local mode). */
  private def taskExecutors(sc: SparkContext): Seq[BlockManagerId] =
    sc.env.blockManager.master.getMemoryStatus.keys.filter(a => !a.isDriver || sc.isLocal).toSeq

  override def getWriter[K, V](
      handle: ShuffleHandle,
      mapId: Long,
      context: TaskContext,
      metrics: ShuffleWriteMetricsReporter): ShuffleWriter[K, V] = {
    val (sortHandle, owners) = handle match {
      case h: AdaptiveShuffleHandle[_, _, _] => (h.writeHandle, h.owners)
      case other => (other, None)
    }
    val writer = sortShuffle.getWriter[K, V](sortHandle, mapId, context, metrics)
    val pushing = for (p <- pushExecutor; o <- owners) yield p.serving(o)
    val servings =
      (transports.serving +: pushing.toSeq).filter(_ != MapOutputServing.BlockServer)
    if (servings.isEmpty) writer
    else
      new ServingShuffleWriter(
        writer,
        handle.shuffleId,
        mapId,
        sortShuffle.shuffleBlockResolver,
        servings)
  }

  override def getReader[K, C](
      handle: ShuffleHandle,
      startMapIndex: Int,
      endMapIndex: Int,
      startPartition: Int,
      endPartition: Int,
      context: TaskContext,
      metrics: ShuffleReadMetricsReporter): ShuffleReader[K, C] = {
    val env = SparkEnv.get
    val settings = FetchSettings(env.conf)
    val counters = handle match {
      case h: AdaptiveShuffleHandle[_, _, _] => h.fetchMetrics.value
      case _ => new FetchCounters
    }
    counters.startPartition = startPartition
    counters.endPartition = endPartition
    executorMetrics.foreach(_.taskReads(context, counters))
    val baseHandle = handle.asInstanceOf[BaseShuffleHandle[K, _, C]]
    val batch = BatchFetch.enabled(
      env.conf,
      baseHandle.dependency.serializer,
      startPartition,
      endPartition,
      context)
    def newFetcher() = {
      val byAddress = SparkCompat.mapSizesByExecutorId(
        handle.shuffleId,
        startMapIndex,
        endMapIndex,
        startPartition,
        endPartition)
      val blocks = byAddress.toSeq
      val chain = transports.forReduceTask(env)
      val merged = for {
        p <- pushExecutor
        h = handle.asInstanceOf[AdaptiveShuffleHandle[_, _, _]]
        owners <- h.ownerVersions
        lostHomes = owners.iterator.flatMap(_.lost).toSet
        // A chunk is read when at least half its bytes are needed: a task reading fewer than
        // half the map outputs (AQE's local reader, narrow skew splits) would read none, so it
        // neither asks for layouts nor seals partitions; unless, replicated, a chunk is the
        // only copy of some of its blocks left.
        if 2L * (math.min(endMapIndex, h.numMaps) - startMapIndex) >= h.numMaps ||
          p.replicated && blocks.exists { case (home, _) => lostHomes(home.executorId) }
      } yield MergedReads.plan(
        handle.shuffleId,
        blocks,
        MergedReads.layouts(
          env,
          p.merges,
          handle.shuffleId,
          owners,
          startPartition,
          endPartition,
          p.replicated,
          RpcUtils.askRpcTimeout(env.conf).duration),
        rangeBytes = p.chunkSize,
        oneSided = transports.readsOneSided,
        lostHomes = lostHomes,
        // Replicated, a replica's chunk holds the blocks of one executor's map outputs only.
        reader = Some(env.executorId).filter(_ => p.replicated))
      merged.foreach { m =>
        counters.chunksAtPeers += m.chunksAtPeers
        counters.chunksInRanges += m.chunksInRanges
        counters.chunksOneSided += m.exposed.size
      }
      val transport = merged.fold(chain) { m =>
        new MergedTransport(transports.forExposedBlocks(env, m.exposed), chain)
      }
      new ShuffleBlockFetcher(
        context,
        transport,
        new BlockManagerLocalBlocks(env.blockManager),
        merged.fold(blocks)(_.blocks).iterator,
        env.serializerManager.wrapStream,
        settings,
        metrics,
        counters,
        shared = PeerTraffic.shared(settings.waitWindow),
        batch = batch,
        backoff = DirectMemoryBackoff.shared,
        chunks = merged.fold(Map.empty[(BlockManagerId, BlockId), IndexedSeq[ChunkPart]])(_.chunks),
        concatenate = merged.exists(_.chunks.nonEmpty) &&
          BatchFetch.concatenable(env.conf, baseHandle.dependency.serializer))
    }
    new AdaptiveShuffleReader[K, C](baseHandle, context, metrics, () => newFetcher())
  }

  override def unregisterShuffle(shuffleId: Int): Boolean = {
    reducers.remove(shuffleId)
    pushDriver.foreach(_.remove(shuffleId))
    ucxRegistry.foreach(_.send(UcxRegistry.ShuffleRemoved(shuffleId)))
    pushExecutor.foreach(_.removeShuffle(shuffleId))
    transports.removed(shuffleId)
    sortShuffle.unregisterShuffle(shuffleId)
  }

  override def shuffleBlockResolver: ShuffleBlockResolver = servingResolver

  /** This executor's push queue, in mode=push. */
  private[spark] def pushQueue: Option[PushQueue] = pushExecutor.map(_.pushQueue)

  /** Driver only, in mode=push: what the owners had merged when each map stage ended. */
  private[spark] def mergeSummaryReport: Map[Int, ShuffleMergeSummary] =
    pushDriver.fold(Map.empty[Int, ShuffleMergeSummary])(_.report)

  /** Driver only, under push.reliability=replicated: lost executors and their map outputs. */
  private[spark] def lossReport: Map[String, Long] =
    pushDriver.fold(Map.empty[String, Long])(_.losses)

  /** This executor's merged partitions, in mode=push. */
  private[spark] def mergeStore: Option[MergeStore] = pushExecutor.map(_.merges)

  override def stop(): Unit = {
    pushDriver.foreach(_.stop())
    // Before the transports: its chunks may be registered with their UCX node.
    pushExecutor.foreach(_.stop())
    transports.stop()
    sortShuffle.stop()
  }
}
