package org.apache.spark.shuffle.adaptive

import org.apache.spark.{ShuffleDependency, SparkConf, SparkEnv, TaskContext}
import org.apache.spark.internal.Logging
import org.apache.spark.shuffle._
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.fetch.{AdaptiveShuffleReader, BlockManagerLocalBlocks, FetchSettings, ShuffleBlockFetcher}
import org.apache.spark.shuffle.adaptive.transport.NettyBlockTransport
import org.apache.spark.shuffle.sort.SortShuffleManager

/**
 * The plugin's entry point: `spark.shuffle.manager=org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager`.
 *
 * Which path runs when:
 *  - '''Map side''' (`registerShuffle`, `getWriter`, `shuffleBlockResolver`, `unregisterShuffle`):
 *    Spark's sort shuffle, unchanged. It picks the bypass-merge writer (few partitions, no
 *    map-side combine), the serialized writer (relocatable serializer, no map-side combine) or
 *    the sort writer, and writes one data, index and checksum file per map task. MapStatus
 *    sizes, checksums, I/O encryption, block migration and cleanup are therefore Spark's own.
 *  - '''Reduce side''' (`getReader`): [[fetch.AdaptiveShuffleReader]] over
 *    [[fetch.ShuffleBlockFetcher]]. Blocks of this executor are read from its files; blocks of
 *    other executors go through a [[transport.BlockTransport]], today [[transport.NettyBlockTransport]]
 *    (Spark's BlockStoreClient, hence `spark.authenticate`, retries and the external shuffle
 *    service). Map ranges (AQE skew splits, local shuffle reader) select the map outputs.
 *    Contiguous partitions are fetched block by block, never as one batch block.
 *  - Push-based shuffle never runs: Spark enables it only for its own SortShuffleManager.
 */
private[spark] class AdaptiveShuffleManager(conf: SparkConf) extends ShuffleManager with Logging {

  private[this] val sortShuffle = new SortShuffleManager(conf)

  override def registerShuffle[K, V, C](
      shuffleId: Int,
      dependency: ShuffleDependency[K, V, C]): ShuffleHandle =
    sortShuffle.registerShuffle(shuffleId, dependency)

  override def getWriter[K, V](
      handle: ShuffleHandle,
      mapId: Long,
      context: TaskContext,
      metrics: ShuffleWriteMetricsReporter): ShuffleWriter[K, V] =
    sortShuffle.getWriter(handle, mapId, context, metrics)

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
    def newFetcher() = new ShuffleBlockFetcher(
      context,
      new NettyBlockTransport(env.blockManager.blockStoreClient),
      new BlockManagerLocalBlocks(env.blockManager),
      SparkCompat.mapSizesByExecutorId(
        handle.shuffleId, startMapIndex, endMapIndex, startPartition, endPartition),
      env.serializerManager.wrapStream,
      settings,
      metrics)
    new AdaptiveShuffleReader[K, C](
      handle.asInstanceOf[BaseShuffleHandle[K, _, C]], context, metrics, () => newFetcher())
  }

  override def unregisterShuffle(shuffleId: Int): Boolean =
    sortShuffle.unregisterShuffle(shuffleId)

  override def shuffleBlockResolver: ShuffleBlockResolver = sortShuffle.shuffleBlockResolver

  override def stop(): Unit = sortShuffle.stop()
}
