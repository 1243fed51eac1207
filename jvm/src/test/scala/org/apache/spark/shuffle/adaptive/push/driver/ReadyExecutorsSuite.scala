package org.apache.spark.shuffle.adaptive.push.driver

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite

import org.apache.spark.scheduler.{SparkListenerBlockManagerAdded, SparkListenerExecutorRemoved, SparkListenerTaskStart, TaskInfo, TaskLocality}
import org.apache.spark.storage.BlockManagerId

class ReadyExecutorsSuite extends AnyFunSuite {

  private val executors = Seq("1", "2").map(id => BlockManagerId(id, s"host-$id", 7000))
  private val driver = BlockManagerId("driver", "host-d", 7000)

  private def added(ready: ReadyExecutors, id: BlockManagerId): Unit =
    ready.onBlockManagerAdded(SparkListenerBlockManagerAdded(0L, id, 1L << 30))

  private def taskStarts(ready: ReadyExecutors, id: BlockManagerId): Unit =
    ready.onTaskStart(
      SparkListenerTaskStart(
        0,
        0,
        new TaskInfo(0L, 0, 0, 0, 0L, id.executorId, id.host, TaskLocality.ANY, false)))

  test("an executor is ready once its block manager is known and it started a task, said once") {
    val heard = mutable.ArrayBuffer.empty[BlockManagerId]
    val ready = new ReadyExecutors(heard += _)
    added(ready, executors(0))
    assert(!ready(executors(0)) && heard.isEmpty, "registered, its shuffle manager maybe not yet")
    taskStarts(ready, executors(0))
    taskStarts(ready, executors(0))
    assert(ready(executors(0)) && heard === Seq(executors(0)))
    // A task start may reach the listeners before the block manager does.
    taskStarts(ready, executors(1))
    assert(heard === Seq(executors(0)))
    added(ready, executors(1))
    assert(ready(executors(1)) && heard === executors)
    assert(ready(driver), "the driver's block manager serves from the start")
    added(ready, driver)
    assert(heard === executors)
    ready.onExecutorRemoved(SparkListenerExecutorRemoved(0L, "1", "lost"))
    assert(!ready(executors(0)))
  }
}
