package org.apache.spark.shuffle.adaptive.flow

import scala.collection.mutable

/**
 * One task's part of an executor-wide count per source (bytes in flight, bytes still to ask):
 * each change goes to both, and [[release]] takes what the task still holds back out of the
 * executor's count, so a task that ends early leaves no load behind. Not thread-safe.
 */
private[spark] final class TaskShare(addToExecutor: (String, Long) => Unit) {
  private[this] val bySource = mutable.HashMap.empty[String, Long]

  def change(source: String, delta: Long): Unit = {
    bySource(source) = bySource.getOrElse(source, 0L) + delta
    addToExecutor(source, delta)
  }

  def release(): Unit = {
    bySource.foreach { case (source, held) => addToExecutor(source, -held) }
    bySource.clear()
  }
}
