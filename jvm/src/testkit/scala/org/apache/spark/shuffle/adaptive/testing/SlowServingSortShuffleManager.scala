package org.apache.spark.shuffle.adaptive.testing

import org.apache.spark.{ShuffleDependency, SparkConf, TaskContext}
import org.apache.spark.shuffle._
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.shuffle.adaptive.compat.ServingShuffleManager

/**
 * Testing only: Spark's sort shuffle, writer and reader unchanged, honouring
 * `spark.shuffle.adaptive.testing.serveDelay`, so that benchmarks compare the plugin with Spark
 * on the same slowed executor.
 */
private[testing] class SlowServingSortShuffleManager(conf: SparkConf)
    extends ServingShuffleManager {

  private[this] val sortShuffle = new SortShuffleManager(conf)
  private[this] lazy val servingResolver =
    ServeDelay.resolverFor(conf, sortShuffle.shuffleBlockResolver)

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
      metrics: ShuffleReadMetricsReporter): ShuffleReader[K, C] =
    sortShuffle.getReader(
      handle,
      startMapIndex,
      endMapIndex,
      startPartition,
      endPartition,
      context,
      metrics)

  override def unregisterShuffle(shuffleId: Int): Boolean = sortShuffle.unregisterShuffle(shuffleId)

  override def shuffleBlockResolver: ShuffleBlockResolver = servingResolver

  override def stop(): Unit = sortShuffle.stop()
}
