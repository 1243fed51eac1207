package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable
import scala.util.control.NonFatal

import one.profiler.{AsyncProfiler, Counter}

/**
 * async-profiler, sampling every thread of this JVM every `intervalNs` of CPU time by `event`,
 * each stack under its thread's name. Not thread-safe: [[StageProfiler]] calls it under its lock.
 */
private[metrics] final class ProfilerSession private (
    profiler: AsyncProfiler,
    val event: String,
    val intervalNs: Long) {

  private def begin(): Unit =
    profiler.execute(s"start,event=$event,interval=${intervalNs}ns,threads")

  /** The stacks sampled since the last cut (collapsed: `frames;... count` per line); samples on. */
  def cut(): String = {
    profiler.execute("stop")
    val stacks = profiler.dumpCollapsed(Counter.SAMPLES)
    begin()
    stacks
  }

  def stop(): Unit =
    try profiler.execute("stop")
    catch { case NonFatal(_) => } // not running: nothing to stop
}

private[metrics] object ProfilerSession {

  /**
   * Starts sampling CPU (perf events; the `itimer` signal where perf events are not allowed), or
   * says why it cannot: async-profiler is not on the class path, has no library for this
   * platform, or neither event starts.
   */
  def start(intervalNs: Long): Either[String, ProfilerSession] =
    try {
      val profiler = AsyncProfiler.getInstance()
      val failures = mutable.ArrayBuffer.empty[String]
      Seq("cpu", "itimer").iterator
        .map { event =>
          val session = new ProfilerSession(profiler, event, intervalNs)
          try { session.begin(); Some(session) }
          catch { case NonFatal(e) => failures += s"event $event: ${e.getMessage}"; None }
        }
        .collectFirst { case Some(session) => session }
        .toRight(failures.mkString("; "))
    } catch {
      case e: LinkageError =>
        Left(s"async-profiler is not usable here (${e.getClass.getSimpleName}: ${e.getMessage})")
      case NonFatal(e) => Left(s"async-profiler did not load: ${e.getMessage}")
    }
}
