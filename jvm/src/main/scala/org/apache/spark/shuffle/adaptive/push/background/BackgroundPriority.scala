package org.apache.spark.shuffle.adaptive.push.background

import java.nio.file.{Files, Paths}
import java.util.concurrent.{ExecutorService, TimeUnit}

import scala.util.control.NonFatal

import org.apache.spark.util.ThreadUtils

/**
 * Lowers a thread's CPU priority below the executor's task threads, so that the work it does
 * on their behalf (pushing map outputs, merging what peers pushed) takes the CPU they leave idle
 * and falls behind when they need every core. Linux gives each thread a nice value of its own;
 * the JVM has no call that sets it (Thread.setPriority is ignored there), so the thread renices
 * its own id, once.
 */
private[push] object BackgroundPriority {

  /**
   * A daemon thread `name` that runs what it is given in order, `niceness` below the calling
   * thread where it can be lowered (`notLowered` is told where it cannot).
   */
  def singleThread(name: String, niceness: Int, notLowered: () => Unit): ExecutorService = {
    val thread = ThreadUtils.newDaemonSingleThreadExecutor(name)
    if (niceness > 0) thread.execute { () =>
      if (!lowerCurrentThread(niceness) && !Thread.currentThread.isInterrupted) notLowered()
    }
    thread
  }

  /**
   * Adds `niceness` (1 to 19) to the calling thread's nice value; false where that cannot be
   * done (not Linux, no `renice`), the thread then runs as before.
   */
  def lowerCurrentThread(niceness: Int): Boolean =
    try {
      val thread = currentThread
      val renice =
        new ProcessBuilder(
          "renice",
          "-n",
          math.min(19, niceOf(thread) + niceness).toString,
          "-p",
          thread)
          .redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD)
          .start()
      renice.waitFor(10, TimeUnit.SECONDS) && renice.exitValue == 0
    } catch {
      // Its executor stopped it meanwhile: it ends as asked.
      case _: InterruptedException =>
        Thread.currentThread.interrupt()
        false
      case NonFatal(_) => false
    }

  /** The nice value of the calling thread. */
  def niceOfCurrentThread: Int = niceOf(currentThread)

  // The calling thread's Linux id.
  private def currentThread: String =
    Files.readSymbolicLink(Paths.get("/proc/thread-self")).getFileName.toString

  /** The nice value of thread `id` of this process (field 19 of its stat). */
  def niceOf(id: String): Int = {
    val stat = new String(Files.readAllBytes(Paths.get(s"/proc/self/task/$id/stat")))
    // The command name (field 2) is in parentheses and may hold spaces.
    stat.substring(stat.lastIndexOf(')') + 2).split(' ')(16).toInt
  }
}
