package org.apache.spark.shuffle.adaptive.metrics

import java.util.{Collections, Map => JMap}
import java.util.concurrent.{ConcurrentHashMap, TimeUnit}
import java.util.concurrent.atomic.AtomicBoolean

import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

import com.codahale.metrics.Gauge
import io.netty.util.internal.PlatformDependent

import org.apache.spark.{SparkContext, SparkEnv}
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}
import org.apache.spark.internal.Logging
import org.apache.spark.util.ThreadUtils

/**
 * Peaks of the direct memory each executor's shuffle reads hold, under any shuffle manager
 * (`spark.plugins=org.apache.spark.shuffle.adaptive.metrics.FetchMemoryProbe`): Spark's executor
 * metrics miss them, as Netty allocates outside the JVM's direct buffer pool. Every
 * [[FetchMemoryProbe.SampleMs]] ms an executor samples its block transfer service's pooled direct
 * memory (`netty_pooled_bytes`: the pool's chunks in use, what Netty's out-of-memory errors are
 * about) and all direct memory Netty allocated (`netty_direct_bytes`), and sends the peaks to the
 * driver when they grew. A sample every 50 ms misses no peak that lasts as long as a block takes to
 * arrive. It also counts the times it found Spark's own fetcher newly out of Netty memory
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

  /** One executor's peaks so far. */
  final case class Peaks(
      executorId: String,
      nettyPooled: Long,
      nettyDirect: Long,
      nettyOomEpisodes: Long)

  private val peaksByExecutor = new ConcurrentHashMap[String, Peaks]

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

  /** The peaks each executor reported, by executor id (empty without the plugin). */
  def peaks: Map[String, Map[String, Long]] = peaksByExecutor.asScala.iterator.map { case (id, p) =>
    id -> Map(
      "netty_pooled_bytes" -> p.nettyPooled,
      "netty_direct_bytes" -> p.nettyDirect,
      "netty_oom_episodes" -> p.nettyOomEpisodes)
  }.toMap

  final class Driver extends DriverPlugin {
    override def init(sc: SparkContext, ctx: PluginContext): JMap[String, String] = {
      peaksByExecutor.clear()
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
                math.max(a.nettyOomEpisodes, b.nettyOomEpisodes)))
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
    private[this] var sentAt = 0L

    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
      context = ctx
      sampler.scheduleWithFixedDelay(() => sample(), SampleMs, SampleMs, TimeUnit.MILLISECONDS)
    }

    private def pooledNow(): Long = {
      val env = SparkEnv.get
      if (env == null) 0L
      else {
        val metrics = env.blockManager.blockTransferService.shuffleMetrics().getMetrics.asScala
        val used = metrics.collect {
          case (name, gauge: Gauge[_]) if name.endsWith("usedDirectMemory") =>
            name -> gauge.getValue.asInstanceOf[Number].longValue
        }
        // Client and server share one pool unless spark.network.sharedByteBufAllocators is off.
        used.find(_._1.contains("client")).orElse(used.headOption).fold(0L)(_._2)
      }
    }

    private def sample(): Unit =
      try {
        pooled = math.max(pooled, pooledNow())
        direct = math.max(direct, PlatformDependent.usedDirectMemory())
        val flagged = sparkFetcherOutOfMemory.exists(_.get())
        if (flagged && !outOfMemory) oomEpisodes += 1
        outOfMemory = flagged
        // Sent once a second at most, and only when a peak grew.
        val now = Peaks(context.executorID(), pooled, direct, oomEpisodes)
        if (now != sent && System.nanoTime() - sentAt >= TimeUnit.SECONDS.toNanos(1)) {
          context.send(now)
          sent = now
          sentAt = System.nanoTime()
        }
      } catch {
        case NonFatal(e) => logDebug("Could not sample the shuffle's direct memory", e)
      }

    override def shutdown(): Unit = {
      sampler.shutdownNow()
      try
        if (context != null) context.send(Peaks(context.executorID(), pooled, direct, oomEpisodes))
      catch { case NonFatal(_) => }
    }
  }
}
