package org.apache.spark.shuffle.adaptive.store

import java.nio.ByteBuffer
import java.util.concurrent.atomic.AtomicBoolean

import scala.util.control.NonFatal

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.internal.Logging
import org.apache.spark.internal.config.EXECUTOR_MEMORY
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{DefaultStoreFraction, STORE_MAX_SIZE}
import org.apache.spark.shuffle.adaptive.metrics.{ExecutorShuffleMetrics, StoreAccumulators}
import org.apache.spark.shuffle.adaptive.store.StoreRegistry.{Locate, StoreUsage}
import org.apache.spark.shuffle.adaptive.transport.MapOutputServing
import org.apache.spark.storage.{BlockManagerId, BlockStatus, ShuffleBlockBatchId, ShuffleBlockId, ShuffleDataBlockId, StorageLevel}
import org.apache.spark.util.ThreadUtils

/**
 * This executor's end of mode=store: its [[ShuffleStore]] and the resolver that serves from it
 * (from the start: the driver counts on every executor's store, see [[StoreRegistry.start]]).
 * The driver's registry is reached from tasks and from the block server's threads, once
 * SparkEnv is complete.
 */
private[spark] final class StoreExecutor(
    conf: SparkConf,
    files: IndexShuffleBlockResolver,
    onRun: (ShuffleBlockBatchId, ByteBuffer, Array[Long]) => Unit,
    metrics: => Option[ExecutorShuffleMetrics])
    extends Logging {

  private[this] lazy val registry = StoreRegistry.ref(SparkEnv.get)

  // What the store tells the driver happens on the block server's threads too, which must not
  // wait for it: one thread sends it, in order.
  private[this] lazy val reporter =
    ThreadUtils.newDaemonSingleThreadExecutor("shuffle-store-reports")
  private[this] val usagePending = new AtomicBoolean(false)
  @volatile private[this] var reporting = false
  @volatile private[this] var stopped = false

  val store: ShuffleStore = new ShuffleStore(StoreExecutor.capacity(conf), reportUsage, received)

  private def inBackground(what: String)(report: => Unit): Unit = if (!stopped) {
    reporting = true
    reporter.execute { () =>
      try report
      catch {
        case NonFatal(e) => logWarning(s"Could not report $what to the driver", e)
      }
    }
  }

  /** Sends the latest usage; changes while a report waits are folded into it. */
  private def reportUsage(s: ShuffleStore): Unit =
    if (usagePending.compareAndSet(false, true)) inBackground("the shuffle store's usage") {
      usagePending.set(false)
      registry.send(StoreUsage(SparkEnv.get.executorId, s.used, s.highWater))
      metrics.foreach(_.storeUsage(s.capacity, s.used, s.highWater, 0, 0, 0, 0, 0, 0))
    }

  /**
   * A run of another executor's map output arrived. The block manager reports it as a data block
   * of that map output, as block migration does: with shuffle tracking, Spark's dynamic
   * allocation then keeps this executor while the shuffle lives.
   */
  private def received(run: ShuffleBlockBatchId, buffer: ByteBuffer, offsets: Array[Long]): Unit = {
    onRun(run, buffer, offsets)
    inBackground(run.toString) {
      SparkEnv.get.blockManager.reportBlockStatus(
        ShuffleDataBlockId(run.shuffleId, run.mapId, IndexShuffleBlockResolver.NOOP_REDUCE_ID),
        BlockStatus(StorageLevel.OFF_HEAP, buffer.capacity, 0))
    }
  }

  val resolver = new StoreBlockResolver(conf, files, store)

  private[this] lazy val placer = new MapOutputPlacer(SparkEnv.get, store, registry)

  /**
   * The serving side of one map task: placing its output before it returns and reporting to
   * `metrics` (the Spark UI) where its blocks went.
   */
  def serving(metrics: Option[StoreAccumulators]): MapOutputServing =
    new StoreMapOutputServing(placer, metrics)

  def stop(): Unit = {
    stopped = true
    store.clear()
    if (reporting) reporter.shutdown()
  }

  /** Where a reduce task reads the blocks `byAddress` lists (see [[StoreRoutes.route]]). */
  def route(
      shuffleId: Int,
      byAddress: Seq[(BlockManagerId, StoreRoutes.Blocks)],
      startPartition: Int,
      endPartition: Int): (Seq[(BlockManagerId, StoreRoutes.Blocks)], StoreRoutes) = {
    val mapIds = byAddress.iterator
      .flatMap(_._2.iterator.map(_._1))
      .collect { case ShuffleBlockId(_, mapId, _) =>
        mapId
      }
      .toArray
      .distinct
    val located = registry.askSync[Array[(Long, Int, String, String, Int)]](
      Locate(shuffleId, mapIds, startPartition, endPartition))
    StoreRoutes.route(
      byAddress,
      located.iterator.map { case (mapId, reduceId, id, host, port) =>
        (mapId, reduceId) -> BlockManagerId(id, host, port)
      }.toMap)
  }
}

private[spark] object StoreExecutor {

  /** `store.maxSize`, or a fraction of the executor's memory. */
  def capacity(conf: SparkConf): Long = conf
    .get(STORE_MAX_SIZE)
    .getOrElse((conf.get(EXECUTOR_MEMORY) * 1024 * 1024 * DefaultStoreFraction).toLong)
}
