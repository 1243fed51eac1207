package org.apache.spark.shuffle.adaptive.fetch

import java.util.Random

import org.apache.spark.{LocalSparkContext, SparkConf, SparkContext, SparkFunSuite, TestUtils}
import org.apache.spark.internal.config.SHUFFLE_MANAGER
import org.apache.spark.shuffle.adaptive.{AdaptiveShuffleManager, PluginCounters, SparkLogsCheck}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{FETCH_EXECUTOR_BUDGET, FETCH_IN_FLIGHT_INCREMENT, FETCH_MAX_IN_FLIGHT}

/**
 * One fetch budget per executor on two executors of four task slots each, blocks crossing the
 * network (host-local reads off): at its minimum, every task reads right, and no executor ever
 * held more than the budget.
 */
class FetchBudgetClusterSuite extends SparkFunSuite with LocalSparkContext with SparkLogsCheck {

  private val Increment = 64 * 1024L
  private val Slots = 4

  private def start(budget: Long, extra: SparkConf => SparkConf = identity): Unit = {
    val conf = new SparkConf()
      .set(SHUFFLE_MANAGER, classOf[AdaptiveShuffleManager].getName)
      .set(FETCH_IN_FLIGHT_INCREMENT, Increment)
      .set(FETCH_MAX_IN_FLIGHT, 16 * Increment)
      .set(FETCH_EXECUTOR_BUDGET, budget)
      .set("spark.executor.cores", Slots.toString)
      .set("spark.shuffle.readHostLocalDisk", "false")
    sc = new SparkContext(s"local-cluster[2,$Slots,1024]", "test", extra(conf))
    TestUtils.waitUntilExecutorsUp(sc, 2, 60000)
  }

  /** Per reduce partition, rows and a checksum of their payloads, computed by Spark. */
  private def shuffled(maps: Int, rowsPerMap: Int, payload: Int, partitions: Int) =
    sc.parallelize(0 until maps, maps)
      .flatMap { m =>
        val random = new Random(m)
        (0 until rowsPerMap).map { r =>
          val bytes = new Array[Byte](payload)
          random.nextBytes(bytes)
          ((m * rowsPerMap + r) % partitions, bytes)
        }
      }
      .groupByKey(partitions)
      .mapValues(vs => (vs.size, vs.map(java.util.Arrays.hashCode).sum))
      .collect()
      .toMap

  /** The same, computed here. */
  private def expected(maps: Int, rowsPerMap: Int, payload: Int, partitions: Int) =
    (0 until maps)
      .flatMap { m =>
        val random = new Random(m)
        (0 until rowsPerMap).map { r =>
          val bytes = new Array[Byte](payload)
          random.nextBytes(bytes)
          ((m * rowsPerMap + r) % partitions, java.util.Arrays.hashCode(bytes))
        }
      }
      .groupBy(_._1)
      .map { case (p, rows) => p -> (rows.size, rows.map(_._2).sum) }

  private def executors(): Map[String, Map[String, Any]] =
    PluginCounters.snapshot(sc)("executors").asInstanceOf[Map[String, Map[String, Any]]]

  test("at its minimum (one increment per slot) the budget bounds every executor; rows are right") {
    start(budget = Slots * Increment)
    // Blocks of about 8 KiB; four tasks per executor read 16 map outputs each at once.
    assert(shuffled(16, 2000, 256, 64) === expected(16, 2000, 256, 64))
    val peaks = executors().values.map(_("executor_fetch_peak_bytes").asInstanceOf[Long])
    assert(peaks.size === 2 && peaks.forall(p => p > 0 && p <= Slots * Increment), peaks)
  }

  test("a budget below an increment per slot shrinks the increment; larger blocks go to disk") {
    // A 128 KiB budget: 32 KiB increments for the 4 slots.
    start(budget = 2 * Increment)
    // Blocks of about 128 KiB, four increments: none fits a task's reserve.
    assert(shuffled(8, 64, 16 * 1024, 8) === expected(8, 64, 16 * 1024, 8))
    val counters = executors().values
    assert(counters.map(_("requests_to_disk").asInstanceOf[Long]).sum > 0)
    assert(counters.forall(_("executor_fetch_peak_bytes").asInstanceOf[Long] <= 2 * Increment))
  }

  test(
    "under a direct-memory cap the budget keeps fetches inside it: no Netty out-of-memory retry") {
    // 64 MiB of direct memory per executor, a few of Netty's pool chunks.
    start(
      budget = 4 * Increment,
      _.set("spark.executor.extraJavaOptions", "-XX:MaxDirectMemorySize=64m")
        .set("spark.network.maxRemoteBlockSizeFetchToMem", "16m"))
    assert(shuffled(16, 512, 2048, 16) === expected(16, 512, 2048, 16))
    val counters = executors().values
    assert(counters.map(_("direct_memory_deferrals").asInstanceOf[Long]).sum === 0)
  }
}
