package org.apache.spark.shuffle.adaptive.metrics

import java.io.File
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, StandardOpenOption}
import java.util.{Collections, Map => JMap}
import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.module.scala.DefaultScalaModule

import org.apache.spark.{SparkContext, TaskContext, TaskFailedReason}
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}
import org.apache.spark.internal.Logging
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{PROFILE_DIR, PROFILE_INTERVAL}
import org.apache.spark.util.ThreadUtils

/**
 * Where each executor's CPU goes, stage by stage, under any shuffle manager
 * (`spark.plugins=org.apache.spark.shuffle.adaptive.metrics.StageProfiler`, with async-profiler's
 * jar, `tools.profiler:async-profiler`, on the class path; `pyspark_shuffle.configure(profile_dir=
 * ...)` sets both). Each executor samples its threads' CPU (async-profiler's `cpu` event, or
 * `itimer` where perf events are not allowed) and cuts the profile into segments: a segment ends
 * when a task of a stage this executor has not run before starts, and when no task has run for
 * [[StageProfiler.IdleMs]] (so a stage's last segment arrives without waiting for the next
 * stage). It sends each segment to the driver, which writes its stacks (async-profiler's
 * collapsed format, one line per stack, the thread's name first) to `profile.dir`/app id/ and a
 * line of `segments.jsonl` saying which stages ran in it, when, and at what sampling interval.
 *
 * A segment holds what every thread of the executor did while it lasted: the tasks of its
 * stages, and background work (Netty, the plugin's pusher and owners, GC) of whatever stage
 * caused it; stages running at once on one executor share their segments.
 */
class StageProfiler extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new StageProfiler.Driver
  override def executorPlugin(): ExecutorPlugin = new StageProfiler.Executor
}

private[metrics] object StageProfiler {

  /** No task ran for this long: the segment ends. */
  val IdleMs = 300L

  /** One executor's profile while the stages `stages` (stage id, attempt) ran. */
  final case class Segment(
      executorId: String,
      seq: Int,
      stages: Seq[(Int, Int)],
      startMs: Long,
      endMs: Long,
      event: String,
      intervalNs: Long,
      collapsed: String)

  /** The executor could not profile, and why. */
  final case class Unavailable(executorId: String, reason: String)

  private val json = new ObjectMapper().registerModule(DefaultScalaModule)

  final class Driver extends DriverPlugin with Logging {
    private[this] var sc: SparkContext = _
    private[this] val lock = new Object

    // The application's id is not known yet while plugins start.
    private[this] lazy val directory: File = {
      val base = sc.conf.get(PROFILE_DIR)
      val dir = new File(if (base.isEmpty) "pyspark-shuffle-profiles" else base, sc.applicationId)
      Files.createDirectories(dir.toPath)
      logInfo(s"Executors' CPU profiles by stage go to ${dir.getAbsolutePath}")
      dir
    }

    override def init(context: SparkContext, ctx: PluginContext): JMap[String, String] = {
      sc = context
      Collections.emptyMap()
    }

    override def receive(message: Any): AnyRef = {
      try
        message match {
          case s: Segment =>
            val name = s"${s.executorId}-${s.seq}.collapsed"
            Files.write(
              new File(directory, name).toPath,
              s.collapsed.getBytes(StandardCharsets.UTF_8))
            append(
              Map(
                "executor" -> s.executorId,
                "seq" -> s.seq,
                "stages" -> s.stages.map { case (id, attempt) => Seq(id, attempt) },
                "start_ms" -> s.startMs,
                "end_ms" -> s.endMs,
                "event" -> s.event,
                "interval_ns" -> s.intervalNs,
                "file" -> name))
          case u: Unavailable =>
            logWarning(s"Executor ${u.executorId} runs without a CPU profile: ${u.reason}")
            append(Map("executor" -> u.executorId, "unavailable" -> u.reason))
          case _ =>
        }
      catch { case NonFatal(e) => logWarning("Could not write a CPU profile", e) }
      null
    }

    private def append(line: Map[String, Any]): Unit = lock.synchronized {
      Files.write(
        new File(directory, "segments.jsonl").toPath,
        (json.writeValueAsString(line) + "\n").getBytes(StandardCharsets.UTF_8),
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND)
    }
  }

  final class Executor extends ExecutorPlugin with Logging {
    @volatile private[this] var context: PluginContext = _
    @volatile private[this] var session: Option[ProfilerSession] = None
    private[this] val idleCheck =
      ThreadUtils.newDaemonSingleThreadScheduledExecutor("stage-profiler")
    private[this] val running = new AtomicInteger
    @volatile private[this] var lastTaskEnd = System.currentTimeMillis()

    // Guarded by `this`.
    private[this] val seen = mutable.HashSet.empty[(Int, Int)]
    private[this] val stages = mutable.LinkedHashSet.empty[(Int, Int)]
    private[this] var segmentStart = System.currentTimeMillis()
    private[this] var seq = 0

    override def init(ctx: PluginContext, extraConf: JMap[String, String]): Unit = {
      context = ctx
      val intervalNs = TimeUnit.MILLISECONDS.toNanos(ctx.conf().get(PROFILE_INTERVAL))
      val started =
        try ProfilerSession.start(intervalNs)
        catch {
          // Loading the session's class itself may need async-profiler's.
          case e: LinkageError => Left(s"async-profiler is not on the class path ($e)")
        }
      started match {
        case Right(started) =>
          session = Some(started)
          segmentStart = System.currentTimeMillis()
          idleCheck.scheduleWithFixedDelay(() => endIfIdle(), 100, 100, TimeUnit.MILLISECONDS)
        case Left(reason) => send(Unavailable(ctx.executorID(), reason))
      }
    }

    override def onTaskStart(): Unit = session.foreach { _ =>
      running.incrementAndGet()
      val task = TaskContext.get()
      if (task != null) {
        val stage = (task.stageId(), task.stageAttemptNumber())
        synchronized {
          if (!seen(stage)) {
            seen += stage
            if (stages.nonEmpty) endSegment()
          }
          stages += stage
        }
      }
    }

    override def onTaskSucceeded(): Unit = taskEnded()

    override def onTaskFailed(failureReason: TaskFailedReason): Unit = taskEnded()

    private def taskEnded(): Unit = if (session.isDefined) {
      lastTaskEnd = System.currentTimeMillis()
      running.decrementAndGet()
    }

    private def endIfIdle(): Unit =
      try
        synchronized {
          if (stages.nonEmpty && running.get == 0 &&
            System.currentTimeMillis() - lastTaskEnd >= IdleMs) endSegment()
        }
      catch { case NonFatal(e) => logWarning("Could not end a CPU profile segment", e) }

    /** Sends what was sampled since the segment started, and starts the next. Holds `this`. */
    private def endSegment(): Unit = session.foreach { s =>
      val end = System.currentTimeMillis()
      val collapsed = s.cut()
      send(
        Segment(
          context.executorID(),
          seq,
          stages.toSeq,
          segmentStart,
          end,
          s.event,
          s.intervalNs,
          collapsed))
      seq += 1
      stages.clear()
      segmentStart = end
    }

    private def send(message: AnyRef): Unit =
      try context.send(message)
      catch { case NonFatal(e) => logWarning("Could not send a CPU profile to the driver", e) }

    override def shutdown(): Unit = {
      idleCheck.shutdownNow()
      try synchronized(if (stages.nonEmpty) endSegment())
      catch { case NonFatal(e) => logWarning("Could not send the last CPU profile", e) }
      session.foreach(_.stop())
      session = None
    }
  }
}
