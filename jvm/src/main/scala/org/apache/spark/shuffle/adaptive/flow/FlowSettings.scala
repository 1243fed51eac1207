package org.apache.spark.shuffle.adaptive.flow

import org.apache.spark.{SparkConf, SparkContext}
import org.apache.spark.internal.config
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf._
import org.apache.spark.shuffle.adaptive.config.KeyCombinations

/**
 * The limits and switches every sender of an executor obeys (its reduce tasks' fetchers, its
 * pusher, its hand-offs), read once per executor from the Spark conf. A field left out takes
 * its key's declared default, so settings built in code agree with an empty conf.
 *
 * @param maxBytesInFlight the hard in-flight limit (bytes requested and not yet consumed)
 * @param requestSize the in-flight increment
 * @param maxAttemptsOnNettyOOM how often a block is deferred for want of direct memory before its
 *                              fetch fails
 * @param executorBudget what the executor's reduce tasks hold at most together ([[FetchBudget]];
 *                       unbounded in settings built in code)
 * @param taskSlots the executor's task slots
 */
private[spark] final case class FlowSettings(
    maxBytesInFlight: Long,
    maxReqsInFlight: Int,
    maxBlocksInFlightPerAddress: Int,
    requestSize: Long,
    maxReqSizeShuffleToMem: Long,
    detectCorrupt: Boolean,
    detectCorruptUseExtraMemory: Boolean,
    checksumEnabled: Boolean,
    checksumAlgorithm: String,
    order: String = FETCH_ORDER.defaultValue.get,
    elastic: Boolean = FETCH_ELASTIC.defaultValue.get,
    shrinkBelow: Double = FETCH_ELASTIC_SHRINK_BELOW.defaultValue.get,
    growAbove: Double = FETCH_ELASTIC_GROW_ABOVE.defaultValue.get,
    waitWindow: Int = FETCH_WAIT_WINDOW.defaultValue.get,
    loadWeight: Double = FETCH_SCORE_LOAD_WEIGHT.defaultValue.get,
    waitWeight: Double = FETCH_SCORE_WAIT_WEIGHT.defaultValue.get,
    maxAttemptsOnNettyOOM: Int = config.SHUFFLE_MAX_ATTEMPTS_ON_NETTY_OOM.defaultValue.get,
    executorBudget: Long = Long.MaxValue,
    taskSlots: Int = 1)
    extends FlowLimits {
  require(maxBytesInFlight > 0, "the hard in-flight limit must be positive")
  require(
    requestSize > 0 && requestSize <= maxBytesInFlight,
    FlowSettings.incrementTooLarge(requestSize, maxBytesInFlight))

  /** The executor's fetch budget, one per executor; none where unbounded. */
  def fetchBudget(): Option[FetchBudget] =
    if (executorBudget == Long.MaxValue) None
    else Some(new FetchBudget(executorBudget, requestSize, taskSlots))

  /**
   * The size of requests that stay few and large whatever the increment: a reduce task's runs of
   * merged chunks (a large merged partition is a handful of requests) and a pusher's uploads.
   * Spark's request size (the hard limit / 5) unless the increment is larger.
   */
  def bulkRequestSize: Long = math.max(requestSize, maxBytesInFlight / 5)

  /** A new in-flight limit for one sender under these settings, from the hard limit. */
  def elasticLimit(): ElasticLimit = limitFrom(maxBytesInFlight)

  /**
   * A new in-flight limit for one reduce task, from one increment: a task grows it while it
   * waits for blocks, so one that consumes slower than blocks arrive never fills the hard limit
   * (or its share of the executor's budget) with blocks it will not read for a while.
   */
  def fetchLimit(): ElasticLimit = limitFrom(requestSize)

  private def limitFrom(start: Long): ElasticLimit =
    new ElasticLimit(
      requestSize,
      maxBytesInFlight,
      elastic,
      waitWindow,
      shrinkBelow,
      growAbove,
      start)
}

private[spark] object FlowSettings {

  /**
   * A reduce task's default in-flight increment. What a task that consumes slower than blocks
   * arrive holds is about one increment (its limit's floor), so the increment is kept near the
   * blocks of a large shuffle, not Spark's request size (maxSizeInFlight / 5, cut to 6 MiB for 8
   * task slots): with 8 slots and 1 MiB blocks that held 0.48x the bytes sort holds, 1 MiB holds
   * 0.18x at the same wall. Requests travel pipelined, so smaller ones cost a round trip each,
   * not a wait each.
   */
  val DefaultIncrement: Long = 1L << 20

  def apply(conf: SparkConf): FlowSettings = {
    // Spark reads maxSizeInFlight in MiB when the value has no unit.
    val within = KeyCombinations.IncrementWithinLimit
    val (hardLimit, limitKey) = conf.get(FETCH_MAX_IN_FLIGHT) match {
      case Some(limit) => (limit, within.limit)
      case None => (conf.get(config.REDUCER_MAX_SIZE_IN_FLIGHT) * 1024 * 1024, within.fallback)
    }
    val slots = math.max(1, taskSlots(conf))
    val budget = math.max(conf.get(FETCH_EXECUTOR_BUDGET).getOrElse(hardLimit), slots.toLong)
    val configured =
      conf.get(FETCH_IN_FLIGHT_INCREMENT).getOrElse(math.min(DefaultIncrement, hardLimit))
    require(configured <= hardLimit, incrementTooLarge(configured, hardLimit, limitKey))
    // Each task slot's reserve in the budget is one increment: with many slots per executor the
    // increment shrinks to fit.
    val increment = math.min(configured, budget / slots)
    FlowSettings(
      maxBytesInFlight = hardLimit,
      maxReqsInFlight = conf.get(config.REDUCER_MAX_REQS_IN_FLIGHT),
      maxBlocksInFlightPerAddress = conf.get(config.REDUCER_MAX_BLOCKS_IN_FLIGHT_PER_ADDRESS),
      requestSize = increment,
      maxReqSizeShuffleToMem = conf.get(config.MAX_REMOTE_BLOCK_SIZE_FETCH_TO_MEM),
      detectCorrupt = conf.get(config.SHUFFLE_DETECT_CORRUPT),
      detectCorruptUseExtraMemory = conf.get(config.SHUFFLE_DETECT_CORRUPT_MEMORY),
      checksumEnabled = conf.get(config.SHUFFLE_CHECKSUM_ENABLED),
      checksumAlgorithm = conf.get(config.SHUFFLE_CHECKSUM_ALGORITHM),
      order = conf.get(FETCH_ORDER),
      elastic = conf.get(FETCH_ELASTIC),
      shrinkBelow = conf.get(FETCH_ELASTIC_SHRINK_BELOW),
      growAbove = conf.get(FETCH_ELASTIC_GROW_ABOVE),
      waitWindow = conf.get(FETCH_WAIT_WINDOW),
      loadWeight = conf.get(FETCH_SCORE_LOAD_WEIGHT),
      waitWeight = conf.get(FETCH_SCORE_WAIT_WEIGHT),
      maxAttemptsOnNettyOOM = conf.get(config.SHUFFLE_MAX_ATTEMPTS_ON_NETTY_OOM),
      executorBudget = budget,
      taskSlots = slots)
  }

  private def incrementTooLarge(
      increment: Long,
      hardLimit: Long,
      limitKey: String = FETCH_MAX_IN_FLIGHT.key): String =
    s"${FETCH_IN_FLIGHT_INCREMENT.key} ($increment bytes) must be positive " +
      s"and at most the hard in-flight limit, $limitKey ($hardLimit bytes)"

  /** Task slots of one executor: its cores (a local master's threads) over the cores a task takes. */
  private def taskSlots(conf: SparkConf): Int = {
    val master = conf.get("spark.master", "")
    val cores =
      if (master.startsWith("local") && !master.startsWith("local-cluster")) {
        SparkContext.numDriverCores(master, conf)
      } else {
        conf.get(config.EXECUTOR_CORES)
      }
    // By name: Spark 4.3 reads spark.task.cpus as a decimal.
    math.floor(cores / math.max(1e-3, conf.get("spark.task.cpus", "1").toDouble)).toInt
  }
}
