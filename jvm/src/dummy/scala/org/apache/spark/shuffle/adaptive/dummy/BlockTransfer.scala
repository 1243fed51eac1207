package org.apache.spark.shuffle.adaptive.dummy

import java.lang.management.ManagementFactory

import com.sun.management.OperatingSystemMXBean

import org.apache.spark.{HashPartitioner, ShuffleDependency, SparkContext, SparkEnv}
import org.apache.spark.scheduler.TaskSchedulerImpl

/**
 * A synthetic shuffle that measures block transfer between two executors: `maps` map tasks on
 * `serving` write one block of `blockBytes` (one record) for each of `reducers` reduce
 * partitions; the reduce tasks run on `reading` and only count the bytes. With the two pinned
 * (the session needs a long `spark.locality.wait`), the serving executor does nothing during the
 * reduce stage but serve, so its CPU time then is what serving costs.
 */
private[spark] object BlockTransfer {

  final case class Result(
      bytes: Long,
      mapSeconds: Double,
      reduceSeconds: Double,
      /** The reduce tasks' time from their first to their last record, added up. */
      readSeconds: Double,
      servingCpuSeconds: Double,
      readingCpuSeconds: Double,
      mapExecutors: Seq[String],
      reduceExecutors: Seq[String])

  def run(
      sc: SparkContext,
      serving: String,
      reading: String,
      maps: Int,
      reducers: Int,
      blockBytes: Int): Result = {
    awaitScheduled(sc, Seq(serving, reading))
    val servingAt = ExecutorProbe.location(sc, serving)
    val partitioned = sc
      .makeRDD((0 until maps).map(m => (m, Seq(servingAt))))
      .mapPartitions { ids =>
        val executor = SparkEnv.get.executorId
        ids.flatMap { m =>
          val payload = Array.tabulate[Byte](blockBytes)(i => (i * 31 + m).toByte)
          (0 until reducers).iterator.map(r => (r, (executor, payload)))
        }
      }
      .partitionBy(new HashPartitioner(reducers))
    val dependency = partitioned.dependencies.head
      .asInstanceOf[ShuffleDependency[Int, (String, Array[Byte]), (String, Array[Byte])]]

    val mapStart = System.nanoTime()
    sc.submitMapStage(dependency).get()
    val mapSeconds = (System.nanoTime() - mapStart) / 1e9

    val cpuBefore = cpuSeconds(sc, Seq(serving, reading))
    val reduceStart = System.nanoTime()
    val counted = new PinnedRDD(partitioned, ExecutorProbe.location(sc, reading))
      .mapPartitions { records =>
        var bytes = 0L
        var first = 0L
        val writers = collection.mutable.Set.empty[String]
        records.foreach { case (_, (writer, payload)) =>
          if (first == 0L) first = System.nanoTime()
          bytes += payload.length
          writers += writer
        }
        val seconds = if (first == 0L) 0.0 else (System.nanoTime() - first) / 1e9
        Iterator((SparkEnv.get.executorId, writers.toSet, bytes, seconds))
      }
      .collect()
    val reduceSeconds = (System.nanoTime() - reduceStart) / 1e9
    val cpuAfter = cpuSeconds(sc, Seq(serving, reading))

    Result(
      bytes = counted.map(_._3).sum,
      mapSeconds = mapSeconds,
      reduceSeconds = reduceSeconds,
      readSeconds = counted.map(_._4).sum,
      servingCpuSeconds = cpuAfter(serving) - cpuBefore(serving),
      readingCpuSeconds = cpuAfter(reading) - cpuBefore(reading),
      mapExecutors = counted.flatMap(_._2).distinct.sorted.toSeq,
      reduceExecutors = counted.map(_._1).distinct.sorted.toSeq)
  }

  /**
   * Waits until the task scheduler has offered each of `executors` work once. Before that it
   * does not count an executor as alive, and a task set submitted then leaves out the locality
   * level of a task pinned to it: the task runs at any executor of its host (seen once on CI, a
   * map task of the serving executor on the reading one).
   */
  private def awaitScheduled(sc: SparkContext, executors: Seq[String]): Unit = {
    val scheduler = sc.taskScheduler.asInstanceOf[TaskSchedulerImpl]
    val deadline = System.nanoTime() + 60L * 1000 * 1000 * 1000
    while (!executors.forall(scheduler.isExecutorAlive)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(s"executors $executors were never offered a task")
      }
      Thread.sleep(10)
    }
  }

  /** Each executor's process CPU time. */
  private def cpuSeconds(sc: SparkContext, executors: Seq[String]): Map[String, Double] =
    ExecutorProbe.onEach(sc, executors) { () =>
      ManagementFactory.getOperatingSystemMXBean
        .asInstanceOf[OperatingSystemMXBean]
        .getProcessCpuTime / 1e9
    }
}
