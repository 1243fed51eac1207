package org.apache.spark.shuffle.adaptive

import org.apache.spark.{ShuffleDependency, SparkConf, TaskContext}
import org.apache.spark.internal.Logging
import org.apache.spark.shuffle._
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.shuffle.adaptive.compat.ServingShuffleManager
import org.apache.spark.shuffle.adaptive.config.Features

/**
 * The plugin's entry point: `spark.shuffle.manager=org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager`.
 *
 * Map tasks write with Spark's sort shuffle (so MapStatus sizes, checksums, I/O encryption,
 * block migration and cleanup are Spark's own), less the records local reduction folds instead
 * of writing ([[combine.CombiningShuffleWriter]]); what the plugin adds runs in
 * [[ExecutorServices]] (each map task's serving and pushing, each reduce task's reader) and
 * [[DriverServices]] (counters, reports, registries, push's placement), what runs being
 * [[config.Features]]. docs/how-it-works.md says how each part works.
 */
private[spark] class AdaptiveShuffleManager(conf: SparkConf)
    extends ServingShuffleManager
    with Logging {

  private[this] val features = Features(conf)
  private[this] val sortShuffle = new SortShuffleManager(conf)

  /**
   * What serves this executor's map-output files: Spark's resolver. A subclass may wrap it (a
   * deliberately slow node, the testkit's `SlowServingAdaptiveShuffleManager`).
   */
  protected def mapOutputFiles(spark: IndexShuffleBlockResolver): IndexShuffleBlockResolver = spark

  private[spark] val executor =
    new ExecutorServices(
      conf,
      features,
      sortShuffle,
      mapOutputFiles(sortShuffle.shuffleBlockResolver))

  @volatile private[this] var driverServices: Option[DriverServices] = None

  /** The driver's services, once a shuffle was registered. */
  private[spark] def driver: Option[DriverServices] = driverServices

  /** Called on the driver. */
  override def registerShuffle[K, V, C](
      shuffleId: Int,
      dependency: ShuffleDependency[K, V, C]): ShuffleHandle = {
    val services = synchronized {
      if (driverServices.isEmpty)
        driverServices = Some(new DriverServices(dependency.rdd.context, features))
      driverServices.get
    }
    services.handle(shuffleId, dependency, sortShuffle.registerShuffle(shuffleId, dependency))
  }

  override def getWriter[K, V](
      handle: ShuffleHandle,
      mapId: Long,
      context: TaskContext,
      metrics: ShuffleWriteMetricsReporter): ShuffleWriter[K, V] =
    executor.writer(handle, mapId, context, metrics)

  override def getReader[K, C](
      handle: ShuffleHandle,
      startMapIndex: Int,
      endMapIndex: Int,
      startPartition: Int,
      endPartition: Int,
      context: TaskContext,
      metrics: ShuffleReadMetricsReporter): ShuffleReader[K, C] =
    executor.reader(
      handle,
      startMapIndex,
      endMapIndex,
      startPartition,
      endPartition,
      context,
      metrics)

  // Spark's cleaner and block manager endpoint call it: the shuffle's files go whatever the
  // plugin's parts do.
  override def unregisterShuffle(shuffleId: Int): Boolean = {
    OnSparkThreads.guarded(s"forget shuffle $shuffleId on the driver") {
      driverServices.foreach(_.unregister(shuffleId))
    }
    OnSparkThreads.guarded(s"remove what this executor holds of shuffle $shuffleId") {
      executor.removeShuffle(shuffleId)
    }
    sortShuffle.unregisterShuffle(shuffleId)
  }

  override def shuffleBlockResolver: ShuffleBlockResolver = executor.resolver

  override def stop(): Unit = {
    OnSparkThreads.guarded("stop the plugin's driver services")(driverServices.foreach(_.stop()))
    OnSparkThreads.guarded("stop the plugin's executor services")(executor.stop())
    sortShuffle.stop()
  }
}
