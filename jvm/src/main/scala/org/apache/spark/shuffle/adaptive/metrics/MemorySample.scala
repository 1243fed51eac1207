package org.apache.spark.shuffle.adaptive.metrics

import java.lang.management.{BufferPoolMXBean, ManagementFactory, MemoryType}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Files, Paths}

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.codahale.metrics.Gauge
import io.netty.buffer.PooledByteBufAllocator
import io.netty.util.internal.PlatformDependent

import org.apache.spark.SparkEnv
import org.apache.spark.metrics.source.Source
import org.apache.spark.network.util.NettyUtils

/**
 * What an executor holds at one moment, as the fetch paper counts memory rather than where a
 * collector's saw-tooth happened to be sampled (bytes each):
 *
 *  - `liveHeap`: the heap each pool kept after its last collection (old generation and the
 *    others): what survives, garbage not yet reached aside;
 *  - `direct`: all direct memory, the JDK's buffers and what Netty allocated itself;
 *  - `nettyPooled`: the chunks of Netty's pool in use (what its out-of-memory errors are about);
 *  - `buffered`: the bytes of the buffers allocated from the pool that receives fetched blocks
 *    (Spark's shared client allocator), so blocks fetched and not yet consumed (and frames still
 *    arriving), under any shuffle manager alike;
 *  - `rss`: the process's resident memory;
 *  - `store`: what the plugin's merge store holds (mode=push: merged chunks, its own and those
 *    peers handed it), as its metrics source says (`store.used`); 0 where nothing was merged.
 */
private[metrics] final case class MemorySample(
    liveHeap: Long,
    direct: Long,
    nettyPooled: Long,
    buffered: Long,
    rss: Long,
    store: Long) {

  def fields: Seq[Long] = Seq(liveHeap, direct, nettyPooled, buffered, rss, store)
}

private[metrics] object MemorySample {

  /** The names [[MemorySample.fields]] go by in the JSON the bench reads. */
  val FieldNames: Seq[String] = Seq(
    "live_heap_bytes",
    "direct_bytes",
    "netty_pooled_bytes",
    "buffered_bytes",
    "rss_bytes",
    "store_bytes")

  private lazy val heapPools =
    ManagementFactory.getMemoryPoolMXBeans.asScala.filter(_.getType == MemoryType.HEAP).toSeq

  private lazy val directBuffers: Option[BufferPoolMXBean] =
    ManagementFactory
      .getPlatformMXBeans(classOf[BufferPoolMXBean])
      .asScala
      .find(_.getName == "direct")

  /**
   * The allocator Spark's transport clients receive blocks into, where
   * `spark.network.sharedByteBufAllocators` is on (its default): the shared pool without
   * thread caches, which clients create on first use and this returns.
   */
  private lazy val fetchAllocator: PooledByteBufAllocator =
    NettyUtils.getSharedPooledByteBufAllocator(true, false)

  def now(): MemorySample = MemorySample(
    heapPools.iterator.flatMap(p => Option(p.getCollectionUsage)).map(_.getUsed).sum,
    directBuffers.fold(0L)(_.getMemoryUsed) + math.max(0L, PlatformDependent.usedDirectMemory()),
    fetchAllocator.metric.usedDirectMemory,
    bufferedBytes(),
    residentBytes(),
    storeBytes(pluginSourcesHere()))

  /**
   * The merge store's `store.used` among `sources` (the plugin's metrics source); 0 without.
   * One lookup: this is read every sample, where copying the registry's gauges would not do.
   */
  def storeBytes(sources: Seq[Source]): Long =
    sources.iterator
      .flatMap(s => Option(s.metricRegistry.getMetrics.get(StorePrefix + "used")))
      .collectFirst { case g: Gauge[_] => g.getValue }
      .collect { case n: Number => n.longValue }
      .getOrElse(0L)

  /**
   * The merge store's figures among `sources` (the plugin's metrics source, `store.*`: what it
   * holds and its totals, such as the bytes that came too late to merge, `push_late`), by their
   * names without the prefix; empty where nothing was merged.
   */
  def storeFigures(sources: Seq[Source]): Map[String, Long] =
    sources.iterator.flatMap { source =>
      source.metricRegistry.getMetrics.asScala.iterator.collect {
        case (name, gauge: Gauge[_]) if name.startsWith(StorePrefix) =>
          gauge.getValue match {
            case n: Number => Some(name.stripPrefix(StorePrefix) -> n.longValue)
            case _ => None
          }
      }.flatten
    }.toMap

  /** This executor's merge store figures ([[storeFigures]]). */
  def storeFiguresHere(): Map[String, Long] = storeFigures(pluginSourcesHere())

  private def pluginSourcesHere(): Seq[Source] =
    Option(SparkEnv.get).fold(Seq.empty[Source])(
      _.metricsSystem.getSourcesByName(PluginMetricsSource.Name))

  private val StorePrefix = "store."

  /**
   * The bytes of the fetch pool's buffers in use: Netty counts a pooled chunk as active whole
   * however little of it is allocated, so each chunk's free bytes come off (what is left over is
   * the allocations larger than a chunk, which Netty counts exactly).
   */
  private def bufferedBytes(): Long =
    fetchAllocator.metric.directArenas.asScala.iterator.map { arena =>
      arena.numActiveBytes -
        arena.chunkLists.asScala.iterator.flatMap(_.asScala).map(_.freeBytes.toLong).sum
    }.sum

  /** Linux's VmRSS of this process; 0 where there is no /proc. */
  private def residentBytes(): Long =
    try {
      Files
        .readAllLines(Paths.get("/proc/self/status"), UTF_8)
        .asScala
        .collectFirst {
          case line if line.startsWith("VmRSS:") =>
            line.stripPrefix("VmRSS:").trim.stripSuffix("kB").trim.toLong * 1024L
        }
        .getOrElse(0L)
    } catch { case NonFatal(_) => 0L }
}
