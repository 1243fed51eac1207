package org.apache.spark.shuffle.adaptive.metrics

import java.util.{Collections, Map => JMap}
import java.util.concurrent.{ConcurrentHashMap, TimeUnit}
import java.util.concurrent.atomic.AtomicBoolean

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import io.netty.util.internal.PlatformDependent

import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}
import org.apache.spark.internal.Logging
import org.apache.spark.util.ThreadUtils

/**
 * What each executor holds, under any shuffle manager
 * (`spark.plugins=org.apache.spark.shuffle.adaptive.metrics.FetchMemoryProbe`): Spark's executor
 * metrics miss Netty's memory, which it allocates outside the JVM's direct buffer pool, and see
 * the heap only where G1's saw-tooth was sampled. Every [[FetchMemoryProbe.SampleMs]] ms an
 * executor takes a [[MemorySample]] (the heap live after collections, direct memory, Netty's pool,
 * the bytes buffered in the pool fetched blocks arrive in, RSS) into a [[MemorySeries]] of
 * [[FetchMemoryProbe.BucketMs]] buckets it sends the driver every second, with the peaks of
 * Netty's pooled memory (`netty_pooled_bytes`: the pool's chunks in use, what Netty's
 * out-of-memory errors are about) and of all direct memory Netty allocated
 * (`netty_direct_bytes`) when they grew. A sample every 50 ms misses no peak that lasts as long
 * as a block takes to arrive. It also counts the times it found Spark's own fetcher newly out of Netty memory
 * (`netty_oom_episodes`: the executor-wide flag sort's reads raise when a fetch fails with Netty's
 * out-of-memory error and then defer their requests until memory is free again); the plugin's
 * fetcher counts its own deferrals exactly, Spark keeps no count, so this is the count sort gets.
 */
class FetchMemoryProbe extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new FetchMemoryProbe.Driver
  override def executorPlugin(): ExecutorPlugin = new FetchMemoryProbe.Executor
}

private[spark] object FetchMemoryProbe {

  val SampleMs = 50L
  val BucketMs = 250L

  /** The buckets the driver keeps per executor: the last hour's. */
  val KeptBuckets: Int = (3600 * 1000 / BucketMs).toInt

  /** Buckets of one executor's series, closed since it last sent some. */
  final case class SeriesPart(executorId: String, buckets: Seq[MemorySeries.Bucket])

  /**
   * One executor's peaks so far, and its merge store's figures as they stand (mode=push; its
   * totals only grow, so the largest reported is the newest).
   */
  final case class Peaks(
      executorId: String,
      nettyPooled: Long,
      nettyDirect: Long,
      nettyOomEpisodes: Long,
      store: Map[String, Long] = Map.empty)

  private val peaksByExecutor = new ConcurrentHashMap[String, Peaks]
  private val seriesByExecutor = new ConcurrentHashMap[String, Vector[MemorySeries.Bucket]]

  /**
   * The flag Spark's fetcher raises, executor-wide, when a read runs out of Netty's memory. Its
   * object is `private[storage]`, public in bytecode: read by reflection, and without it (a Spark
   * that moved it) no episode is counted.
   */
  private[metrics] lazy val sparkFetcherOutOfMemory: Option[AtomicBoolean] =
    try {
      val companion = Class.forName("org.apache.spark.storage.ShuffleBlockFetcherIterator$")
      val module = companion.getField("MODULE$").get(null)
      Some(companion.getMethod("isNettyOOMOnShuffle").invoke(module).asInstanceOf[AtomicBoolean])
    } catch { case NonFatal(_) => None }

  /**
   * The peaks each executor reported, by executor id (empty without the plugin), with its merge
   * store's figures as `store_*` (mode=push).
   */
  def peaks: Map[String, Map[String, Long]] = peaksByExecutor.asScala.iterator.map { case (id, p) =>
    id -> (Map(
      "netty_pooled_bytes" -> p.nettyPooled,
      "netty_direct_bytes" -> p.nettyDirect,
      "netty_oom_episodes" -> p.nettyOomEpisodes) ++
      p.store.map { case (name, value) => s"store_$name" -> value })
  }.toMap

  /**
   * Each executor's series (empty without the plugin): `{"bucket_ms", "start_ms": [...], field:
   * {"max": [...], "mean": [...]}}` for each of [[MemorySample.FieldNames]].
   */
  def series: Map[String, Map[String, Any]] = seriesByExecutor.asScala.iterator.map {
    case (id, buckets) =>
      id -> (Map[String, Any]("bucket_ms" -> BucketMs, "start_ms" -> buckets.map(_.startMs)) ++
        MemorySample.FieldNames.zipWithIndex.map { case (name, i) =>
          name -> Map("max" -> buckets.map(_.max(i)), "mean" -> buckets.map(_.mean(i)))
        })
  }.toMap

  final class Driver extends DriverPlugin {
    override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
      peaksByExecutor.clear()
      seriesByExecutor.clear()
      Collections.emptyMap()
    }

    override def receive(message: Any): AnyRef = {
      message match {
        case p: Peaks =>
          peaksByExecutor.merge(
            p.executorId,
            p,
            (a, b) =>
              Peaks(
                a.executorId,
                math.max(a.nettyPooled, b.nettyPooled),
                math.max(a.nettyDirect, b.nettyDirect),
                math.max(a.nettyOomEpisodes, b.nettyOomEpisodes),
                (a.store.keySet ++ b.store.keySet).iterator.map { name =>
                  name -> math.max(a.store.getOrElse(name, 0L), b.store.getOrElse(name, 0L))
                }.toMap))
        case SeriesPart(executorId, buckets) =>
          seriesByExecutor.merge(
            executorId,
            buckets.toVector,
            (held, more) => (held ++ more).takeRight(KeptBuckets))
        case _ =>
      }
      null
    }
  }

  final class Executor extends ExecutorPlugin with Logging {
    private[this] val sampler =
      ThreadUtils.newDaemonSingleThreadScheduledExecutor("fetch-memory-probe")
    @volatile private[this] var context: PluginContext = _
    private[this] var pooled = 0L
    private[this] var direct = 0L
    private[this] var outOfMemory = false
    private[this] var oomEpisodes = 0L
    private[this] var sent = Peaks("", -1L, -1L, -1L)
    private[this] val series = new MemorySeries(BucketMs)
    private[this] var sentAt = 0L

    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
      context = ctx
      sampler.scheduleWithFixedDelay(() => sample(), SampleMs, SampleMs, TimeUnit.MILLISECONDS)
    }

    private def sample(): Unit =
      try {
        val now = MemorySample.now()
        series.add(System.currentTimeMillis(), now)
        pooled = math.max(pooled, now.nettyPooled)
        direct = math.max(direct, PlatformDependent.usedDirectMemory())
        val flagged = sparkFetcherOutOfMemory.exists(_.get())
        if (flagged && !outOfMemory) oomEpisodes += 1
        outOfMemory = flagged
        // Sent once a second at most: the series' closed buckets, and the peaks where one grew.
        if (System.nanoTime() - sentAt >= TimeUnit.SECONDS.toNanos(1)) {
          send(all = false)
          sentAt = System.nanoTime()
        }
      } catch {
        case NonFatal(e) => logDebug("Could not sample the executor's memory", e)
      }

    private def send(all: Boolean): Unit = {
      val buckets = series.drain(all)
      if (buckets.nonEmpty) context.send(SeriesPart(context.executorID(), buckets))
      val peaks =
        Peaks(context.executorID(), pooled, direct, oomEpisodes, MemorySample.storeFiguresHere())
      if (peaks != sent || all) {
        context.send(peaks)
        sent = peaks
      }
    }

    override def shutdown(): Unit = {
      sampler.shutdownNow()
      // The series is the sampler's alone until it has stopped.
      try if (sampler.awaitTermination(1, TimeUnit.SECONDS) && context != null) send(all = true)
      catch { case NonFatal(_) => }
    }
  }
}
