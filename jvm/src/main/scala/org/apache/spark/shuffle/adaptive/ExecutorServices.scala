package org.apache.spark.shuffle.adaptive

import org.apache.spark.{SparkConf, SparkContext, SparkEnv, TaskContext}
import org.apache.spark.network.netty.SparkTransportConf
import org.apache.spark.shuffle._
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.util.SystemClock
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.COMBINE_MAX_MEMORY
import org.apache.spark.shuffle.adaptive.config.Features
import org.apache.spark.shuffle.adaptive.fetch.{AdaptiveShuffleReader, BatchFetch, BlockManagerLocalBlocks, DirectMemoryBackoff, ExecutorFetch, ShuffleBlockFetcher, TaskFetch}
import org.apache.spark.shuffle.adaptive.flow.{FlowSettings, PeerTraffic}
import org.apache.spark.shuffle.adaptive.memory.MemoryBound
import org.apache.spark.shuffle.adaptive.metrics.{ExecutorShuffleMetrics, FetchCounters}
import org.apache.spark.shuffle.adaptive.protocol.MessageResolver
import org.apache.spark.shuffle.adaptive.push.PushExecutor
import org.apache.spark.shuffle.adaptive.transport.{MapOutputListener, NotifyingShuffleWriter}
import org.apache.spark.shuffle.adaptive.read.{BundlesTransport, ReadPlanPart, ReadPlanner, ReduceRead}
import org.apache.spark.shuffle.adaptive.combine.store.{CombineMemory, CombineStore, CombinedShuffle, CombiningShuffleWriter}
import org.apache.spark.shuffle.adaptive.combine.reduce.CombinedReadPart

/**
 * The plugin's executor (and a local-mode driver): the transports, this executor's metrics
 * source, its local reduction ([[combine.CombineStore]]), in mode=push its store and pusher
 * ([[push.PushExecutor]]), and what wires them into each map task's writer and each reduce
 * task's reader.
 *
 * @param files what serves this executor's map-output files (Spark's resolver, or a wrapper)
 */
private[adaptive] final class ExecutorServices(
    conf: SparkConf,
    features: Features,
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
    if (features.push)
      Some(
        new PushExecutor(conf, metrics, () => transports.remoteMemory, flow, features.replicated))
    else None

  private[this] lazy val combines: Option[CombineStore] =
    if (features.combine)
      Some(
        new CombineStore(
          new CombineMemory(MemoryBound.capacity(conf, COMBINE_MAX_MEMORY)),
          SparkEnv.get.serializerManager.wrapStream(_, _),
          () => SparkEnv.get.blockManager.diskBlockManager.createTempLocalBlock()._2,
          SparkTransportConf.fromSparkConf(conf, "shuffle")))
    else None

  lazy val resolver: ShuffleBlockResolver = {
    val handlers = combines.toSeq ++ push.map(_.messages)
    if (handlers.isEmpty) mapOutputFiles
    else new MessageResolver(conf, mapOutputFiles, handlers)
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
    combining(handle).fold(served) { case (h, reduction, shuffle) =>
      new CombiningShuffleWriter(
        served,
        h.dependency.partitioner,
        mapId,
        context,
        SparkEnv.get.executorId,
        shuffle,
        reduction.spec,
        h.fetchMetrics.value,
        reduction.executors)
    }
  }

  /** A shuffle whose records this executor combines, with its combined records here. */
  private def combining(handle: ShuffleHandle)
      : Option[(AdaptiveShuffleHandle[_, _, _], LocalReduction, CombinedShuffle)] =
    for {
      store <- combines
      h <- Some(handle).collect { case h: AdaptiveShuffleHandle[_, _, _] => h }
      reduction <- h.combine
      shuffle <- store.shuffle(
        h.shuffleId,
        h.dependency.partitioner.numPartitions,
        reduction.spec,
        h.dependency.serializer)
    } yield (h, reduction, shuffle)

  /**
   * A reduce task's reader. What it reads is the map output tracker's view, rewritten by each
   * feature's part of the plan ([[readParts]], joined by [[ReadPlanner]]); the requests they read
   * whole go through the block server.
   */
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
    val adaptive = Some(handle).collect { case h: AdaptiveShuffleHandle[_, _, _] => h }
    val counters = adaptive.fold(new FetchCounters)(_.fetchMetrics.value)
    counters.startPartition = startPartition
    counters.endPartition = endPartition
    metrics.foreach(_.taskReads(context, counters))
    val baseHandle = handle.asInstanceOf[BaseShuffleHandle[K, _, C]]
    val serializer = baseHandle.dependency.serializer
    val batch = BatchFetch.enabled(env.conf, serializer, startPartition, endPartition, context)
    def newFetcher() = {
      val plan = ReadPlanner.plan(
        ReduceRead(
          handle.shuffleId,
          startMapIndex,
          endMapIndex,
          startPartition,
          endPartition,
          counters),
        adaptive.toSeq.flatMap(readParts))
      val chain = transports.forReduceTask(env)
      val transport =
        if (plan.bundles.isEmpty) chain
        else new BundlesTransport(transports.forExposedBlocks(env, plan.exposed), chain)
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
          plan.requests(
            env.blockManager.blockManagerId,
            batch,
            BatchFetch.concatenable(env.conf, serializer)),
          settings.fetchLimit()),
        readMetrics,
        counters)
    }
    new AdaptiveShuffleReader[K, C](baseHandle, context, readMetrics, () => newFetcher())
  }

  /**
   * Each feature's part of the read plans of `h`'s reduce tasks, in the order they rewrite a
   * plan: local reduction's combined records, then mode=push's merged chunks.
   */
  private def readParts(h: AdaptiveShuffleHandle[_, _, _]): Seq[ReadPlanPart] =
    combines.map { _ =>
      new CombinedReadPart(
        h.combine.isDefined,
        h.combiningExecutors,
        h.dependency.partitioner.numPartitions)
    }.toSeq ++ push.map(_.readPart(h.ownerVersions, h.numMaps, transports.readsOneSided))

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
