package org.apache.spark.shuffle.adaptive

import scala.util.control.NonFatal

import org.apache.spark.internal.Logging

/**
 * The plugin's work on threads Spark owns (the context cleaner, the block manager's endpoint,
 * the executor's shutdown), where an exception would skip what Spark does after the call:
 * it is logged as an error, which tests and the benchmark read, and the call returns.
 */
private[adaptive] object OnSparkThreads extends Logging {

  def guarded(what: => String)(body: => Unit): Unit =
    try body
    catch { case NonFatal(e) => logError(s"Could not $what", e) }
}
