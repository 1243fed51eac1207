package org.apache.spark.shuffle.adaptive.push.driver

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.scheduler.{SparkListener, SparkListenerBlockManagerAdded, SparkListenerExecutorRemoved, SparkListenerTaskStart}
import org.apache.spark.storage.BlockManagerId

/**
 * The executors push may send to: those that have started a task. An executor's block manager
 * registers before the executor makes its shuffle manager, and a shuffle request reaching the
 * block manager in between finds none and keeps finding none (Spark's
 * `BlockManager.shuffleManager` is a lazy val): every later fetch of its map outputs fails.
 * An owner table sent to an executor whose block manager had just registered did that. A task
 * runs only once its executor is made, shuffle manager included.
 *
 * `ready` hears of each executor once its block manager is known and it has started a task, on
 * the listener bus's thread.
 */
private[driver] final class ReadyExecutors(ready: BlockManagerId => Unit) extends SparkListener {
  private[this] val blockManagers = new ConcurrentHashMap[String, BlockManagerId]
  private[this] val running = ConcurrentHashMap.newKeySet[String]()

  /** Whether `executor` has started a task (the driver's block manager always has). */
  def apply(executor: BlockManagerId): Boolean =
    executor.isDriver || running.contains(executor.executorId)

  override def onBlockManagerAdded(added: SparkListenerBlockManagerAdded): Unit = {
    val id = added.blockManagerId
    if (!id.isDriver) {
      val first = blockManagers.put(id.executorId, id) == null
      if (first && running.contains(id.executorId)) ready(id)
    }
  }

  override def onTaskStart(start: SparkListenerTaskStart): Unit =
    if (running.add(start.taskInfo.executorId)) {
      Option(blockManagers.get(start.taskInfo.executorId)).foreach(ready)
    }

  override def onExecutorRemoved(removed: SparkListenerExecutorRemoved): Unit = {
    blockManagers.remove(removed.executorId)
    running.remove(removed.executorId)
  }
}
