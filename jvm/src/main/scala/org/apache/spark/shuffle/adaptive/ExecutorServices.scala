package org.apache.spark.shuffle.adaptive

import org.apache.spark.{SparkConf, SparkContext, SparkEnv, TaskContext}
import org.apache.spark.network.netty.SparkTransportConf
import org.apache.spark.shuffle._
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.storage.{BlockId, BlockManagerId, ShuffleBlockId}
import org.apache.spark.util.{RpcUtils, SystemClock}
import org.apache.spark.shuffle.adaptive.combine.{CombineMemory, CombineStore, CombinedRead, CombinedShuffle, CombiningBlockResolver, CombiningShuffleWriter}
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.config.Modes
import org.apache.spark.shuffle.adaptive.fetch.{AdaptiveShuffleReader, BatchFetch, BlockManagerLocalBlocks, DirectMemoryBackoff, ExecutorFetch, ShuffleBlockFetcher, TaskFetch, WholeRead}
import org.apache.spark.shuffle.adaptive.flow.{BlockRef, FlowSettings, PeerTraffic}
import org.apache.spark.shuffle.adaptive.metrics.{CombineCounters, ExecutorShuffleMetrics, FetchCounters}
import org.apache.spark.shuffle.adaptive.push.PushExecutor
import org.apache.spark.shuffle.adaptive.push.reduce.{MergedReads, MergedTransport}
import org.apache.spark.shuffle.adaptive.transport.{BlockTransport, MapOutputListener, NotifyingShuffleWriter, RemoteRegion}

/**
 * The plugin's executor (and a local-mode driver): the transports, this executor's metrics
 * source, its local reduction ([[combine.CombineStore]]), in mode=push its store and pusher
 * ([[push.PushExecutor]]), and what wires them into each map task's writer and each reduce
 * task's reader.
 *
 * @param files what serves this executor's map-output files (Spark's resolver, or a wrapper)
 */
private[spark] final class ExecutorServices(
    conf: SparkConf,
    modes: Modes,
    sortShuffle: SortShuffleManager,
    files: => IndexShuffleBlockResolver) {

  private[this] val transports = new TransportFactory(conf)

  /** What every sender and reduce task of this executor obeys, read once. */
  private[this] lazy val flow = FlowSettings(conf)
  private[this] lazy val fetchBudget = flow.fetchBudget()

  /** Registered with the first task that needs it; a local-mode driver's are the driver's. */
  private[this] lazy val metrics: Option[ExecutorShuffleMetrics] =
    Option(SparkEnv.get).filter(_.executorId != SparkContext.DRIVER_IDENTIFIER).map { env =>
      val metrics = new ExecutorShuffleMetrics
      env.metricsSystem.registerSource(metrics.source)
      metrics
    }

  private[this] lazy val mapOutputFiles = files

  lazy val push: Option[PushExecutor] =
    if (modes.push)
      Some(
        new PushExecutor(
          conf,
          mapOutputFiles,
          metrics,
          () => transports.remoteMemory,
          flow,
          modes.replicated))
    else None

  private[this] lazy val combines: Option[CombineStore] =
    if (modes.combine)
      Some(
        new CombineStore(
          new CombineMemory(CombineStore.capacity(conf)),
          SparkEnv.get.serializerManager.wrapStream(_, _),
          () => SparkEnv.get.blockManager.diskBlockManager.createTempLocalBlock()._2,
          SparkTransportConf.fromSparkConf(conf, "shuffle")))
    else None

  lazy val resolver: ShuffleBlockResolver = {
    val served = push.map(_.resolver).getOrElse(mapOutputFiles)
    combines.fold[ShuffleBlockResolver](served)(
      new CombiningBlockResolver(conf, mapOutputFiles, served, _))
  }

  def writer[K, V](
      handle: ShuffleHandle,
      mapId: Long,
      context: TaskContext,
      writeMetrics: ShuffleWriteMetricsReporter): ShuffleWriter[K, V] = {
    val (sortHandle, owners, reducedAtOwners) = handle match {
      case h: AdaptiveShuffleHandle[_, _, _] => (h.writeHandle, h.owners, h.reducedAtOwners)
      case other => (other, None, false)
    }
    val writer = sortShuffle.getWriter[K, V](sortHandle, mapId, context, writeMetrics)
    val pushing = for (p <- push; o <- owners) yield p.listener(o, reducedAtOwners)
    val listeners =
      (transports.listener +: pushing.toSeq).filter(_ != MapOutputListener.BlockServer)
    val served =
      if (listeners.isEmpty) writer
      else
        new NotifyingShuffleWriter(
          writer,
          handle.shuffleId,
          mapId,
          sortShuffle.shuffleBlockResolver,
          listeners)
    combining(handle).fold(served) { case (h, shuffle) =>
      new CombiningShuffleWriter(
        served,
        h.dependency.partitioner,
        mapId,
        context.partitionId(),
        SparkEnv.get.executorId,
        shuffle,
        h.fetchMetrics.value.combine)
    }
  }

  /** A shuffle whose records this executor combines, with its combined records here. */
  private def combining(
      handle: ShuffleHandle): Option[(AdaptiveShuffleHandle[_, _, _], CombinedShuffle)] =
    for {
      store <- combines
      h <- Some(handle).collect { case h: AdaptiveShuffleHandle[_, _, _] => h }
      spec <- h.combine
      shuffle <- store.shuffle(
        h.shuffleId,
        h.dependency.partitioner.numPartitions,
        spec,
        h.dependency.serializer)
      if shuffle.combining
    } yield (h, shuffle)

  def reader[K, C](
      handle: ShuffleHandle,
      startMapIndex: Int,
      endMapIndex: Int,
      startPartition: Int,
      endPartition: Int,
      context: TaskContext,
      readMetrics: ShuffleReadMetricsReporter): ShuffleReader[K, C] = {
    val env = SparkEnv.get
    val settings = flow
    val counters = handle match {
      case h: AdaptiveShuffleHandle[_, _, _] => h.fetchMetrics.value
      case _ => new FetchCounters
    }
    counters.startPartition = startPartition
    counters.endPartition = endPartition
    metrics.foreach(_.taskReads(context, counters))
    val baseHandle = handle.asInstanceOf[BaseShuffleHandle[K, _, C]]
    val batch = BatchFetch.enabled(
      env.conf,
      baseHandle.dependency.serializer,
      startPartition,
      endPartition,
      context)
    def newFetcher() = {
      val listed = SparkCompat
        .mapSizesByExecutorId(
          handle.shuffleId,
          startMapIndex,
          endMapIndex,
          startPartition,
          endPartition)
        .toSeq
      val combined = combinedReads(
        handle,
        listed,
        startMapIndex,
        endMapIndex,
        startPartition,
        endPartition,
        counters.combine)
      val blocks = combined.fold(listed)(_._1)
      val chain = transports.forReduceTask(env)
      val merged = push.flatMap(
        mergedReads(
          _,
          env,
          handle,
          blocks,
          startMapIndex,
          endMapIndex,
          startPartition,
          endPartition))
      merged.foreach { m =>
        counters.add(FetchCounters.ChunksAtPeers, m.chunksAtPeers)
        counters.add(FetchCounters.ChunksInRanges, m.chunksInRanges)
        counters.add(FetchCounters.ChunksOneSided, m.exposed.size)
      }
      val transport: BlockTransport =
        if (merged.isEmpty && combined.isEmpty) chain
        else
          new MergedTransport(
            transports.forExposedBlocks(
              env,
              merged.fold(Map.empty[(BlockManagerId, BlockId), RemoteRegion])(_.exposed)),
            chain)
      val wholeReads =
        merged.fold(Map.empty[(BlockManagerId, BlockId), WholeRead])(_.chunks) ++
          combined.fold(Map.empty[(BlockManagerId, BlockId), WholeRead])(_._2)
      new ShuffleBlockFetcher(
        context,
        ExecutorFetch(
          new BlockManagerLocalBlocks(env.blockManager),
          settings,
          PeerTraffic.shared(settings.waitWindow),
          DirectMemoryBackoff.shared,
          env.serializerManager.wrapStream,
          new SystemClock,
          fetchBudget),
        TaskFetch(
          transport,
          merged.fold(blocks)(_.blocks).iterator,
          settings.elasticLimit(),
          wholeReads,
          batch,
          concatenate = wholeReads.nonEmpty &&
            BatchFetch.concatenable(env.conf, baseHandle.dependency.serializer)),
        readMetrics,
        counters)
    }
    new AdaptiveShuffleReader[K, C](baseHandle, context, readMetrics, () => newFetcher())
  }

  /**
   * Local reduction: a task that reads every map output of a shuffle that combines reads, from
   * each executor with blocks for it, what that executor combined of its partitions, in one
   * request in place of those blocks ([[CombinedRead]]); the listed blocks with those requests
   * in their place, and the requests. A task that reads only some map outputs (AQE's skew
   * splits and local reads) would find no segment it can use, so it reads the files.
   */
  private def combinedReads(
      handle: ShuffleHandle,
      listed: Seq[(BlockManagerId, MergedReads.Blocks)],
      startMapIndex: Int,
      endMapIndex: Int,
      startPartition: Int,
      endPartition: Int,
      counters: CombineCounters): Option[
    (Seq[(BlockManagerId, MergedReads.Blocks)], Map[(BlockManagerId, BlockId), WholeRead])] =
    for {
      _ <- combines
      h <- Some(handle).collect { case h: AdaptiveShuffleHandle[_, _, _] => h }
      if h.combine.isDefined && startMapIndex == 0 && endMapIndex >= h.numMaps
    } yield {
      val reads = listed.iterator
        // Only where folds met keys held: what decommissioned executors left in the fallback
        // storage, for one, was combined nowhere.
        .filter { case (home, _) => h.combiningExecutors(home.executorId) }
        .map { case (home, blocks) =>
          val needed = blocks.iterator.collect {
            case (id: ShuffleBlockId, size, mapIndex) if size > 0 => BlockRef(id, size, mapIndex)
          }.toIndexedSeq
          home -> new CombinedRead(
            h.shuffleId,
            startPartition,
            endPartition,
            home,
            needed,
            counters)
        }
        .filter(_._2.blocks > 0)
        .toMap
      val blocks = listed.map { case (home, homeBlocks) =>
        reads.get(home).fold(home -> homeBlocks) { read =>
          home -> Seq[(BlockId, Long, Int)]((read.id, read.ref.size, read.ref.mapIndex))
        }
      }
      (blocks, reads.map { case (home, read) => (home, read.id) -> (read: WholeRead) })
    }

  /**
   * mode=push: which of `blocks` a reduce task reads out of merged chunks, asked of the owners
   * of its partitions; none when the task reads too few map outputs for chunks to pay.
   */
  private def mergedReads(
      push: PushExecutor,
      env: SparkEnv,
      handle: ShuffleHandle,
      blocks: Seq[(BlockManagerId, MergedReads.Blocks)],
      startMapIndex: Int,
      endMapIndex: Int,
      startPartition: Int,
      endPartition: Int): Option[MergedReads] = for {
    h <- Some(handle).collect { case h: AdaptiveShuffleHandle[_, _, _] => h }
    owners <- h.ownerVersions
    lostHomes = owners.iterator.flatMap(_.lost).toSet
    // A chunk is read when at least half its bytes are needed: a task reading fewer than half
    // the map outputs (AQE's local reader, narrow skew splits) would read none, so it neither
    // asks for layouts nor seals partitions; unless, replicated, a chunk is the only copy of
    // some of its blocks left.
    if 2L * (math.min(endMapIndex, h.numMaps) - startMapIndex) >= h.numMaps ||
      push.replicated && blocks.exists { case (home, _) => lostHomes(home.executorId) }
  } yield MergedReads.plan(
    handle.shuffleId,
    blocks,
    MergedReads.layouts(
      env,
      push.merges,
      handle.shuffleId,
      owners,
      startPartition,
      endPartition,
      push.replicated,
      RpcUtils.askRpcTimeout(env.conf).duration),
    rangeBytes = push.chunkSize,
    oneSided = transports.readsOneSided,
    lostHomes = lostHomes,
    // Replicated, a replica's chunk holds the blocks of one executor's map outputs only.
    reader = Some(env.executorId).filter(_ => push.replicated))

  def removeShuffle(shuffleId: Int): Unit = {
    combines.foreach(_.removeShuffle(shuffleId))
    push.foreach(_.removeShuffle(shuffleId))
    transports.removed(shuffleId)
  }

  def stop(): Unit = {
    // Before the transports: its chunks may be registered with their UCX node.
    push.foreach(_.stop())
    combines.foreach(_.clear())
    transports.stop()
  }
}
