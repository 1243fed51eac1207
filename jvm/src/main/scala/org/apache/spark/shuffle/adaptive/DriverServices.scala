package org.apache.spark.shuffle.adaptive

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.{ShuffleDependency, SparkContext}
import org.apache.spark.rpc.RpcEndpointRef
import org.apache.spark.shuffle.ShuffleHandle
import org.apache.spark.storage.BlockManagerId
import org.apache.spark.shuffle.adaptive.compat.SparkCompat
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.PUSH_AUTO_WAIT_SHARE
import org.apache.spark.shuffle.adaptive.config.Features
import org.apache.spark.shuffle.adaptive.metrics.{FetchCounters, FetchMetricsAccumulator, FetchMetricsListener, MetricsReport, PluginMetricsSource, ShuffleCpu, ShuffleReadReporter}
import org.apache.spark.shuffle.adaptive.push.driver.{OwnerReads, PushDriver, PushVerdict, ShuffleMergeSummary, TableArithmetic}
import org.apache.spark.shuffle.adaptive.transport.ucx.UcxRegistry
import org.apache.spark.shuffle.adaptive.combine.rdd.AggregatorCombine
import org.apache.spark.shuffle.adaptive.combine.driver.CombiningExecutors

/**
 * The plugin's driver: the counters of finished reduce tasks (a listener and a metrics source),
 * the skew report's reader, the UCX registry where UCX may run, and in mode=push the owners'
 * placement, merge summaries and losses ([[push.driver.PushDriver]]). Each shuffle registered gets its
 * handle here. Built with the first shuffle, because it needs the SparkContext and the shuffle
 * manager is made before it.
 */
private[spark] final class DriverServices(sc: SparkContext, features: Features) {

  private[this] val metricsSource = new PluginMetricsSource

  val fetchMetrics = new FetchMetricsListener(metricsSource)
  sc.addSparkListener(fetchMetrics)
  sc.env.metricsSystem.registerSource(metricsSource)

  /** Each shuffle's reduce partitions. */
  private[this] val reducers = new ConcurrentHashMap[Int, Int]

  private def partitionBytes(shuffleId: Int): Seq[Long] =
    SparkCompat.partitionBytes(shuffleId, reducers.getOrDefault(shuffleId, 0))

  private[this] val shuffleCpu = new ShuffleCpu
  sc.addSparkListener(shuffleCpu)

  val readReports =
    new ShuffleReadReporter(partitionBytes, fetchMetrics.combineOf, shuffleCpu, sc.listenerBus.post)
  sc.addSparkListener(readReports)

  private[this] val ucxRegistry: Option[RpcEndpointRef] =
    if (features.ucxMayRun) Some(UcxRegistry.start(sc)) else None

  private[this] val pushDriver: Option[PushDriver] =
    if (features.push)
      Some(
        new PushDriver(
          sc,
          () => taskExecutors,
          partitionBytes(_).sum,
          s => metricsSource.update("push.", Map(s.shuffleId.toString -> s.toMap)),
          features.replicated))
    else None

  private[this] val ownerReads: Option[OwnerReads] =
    if (features.push) Some(new OwnerReads) else None
  ownerReads.foreach(sc.addSparkListener)

  private[this] val pushVerdict: Option[PushVerdict] =
    if (features.auto) Some(new PushVerdict(sc.conf.get(PUSH_AUTO_WAIT_SHARE))) else None
  pushVerdict.foreach(sc.addSparkListener)

  /** mode=auto: whether `shuffleId` was pushed, and why. */
  def verdictOf(shuffleId: Int): Option[PushVerdict.Verdict] = pushVerdict.flatMap(_.of(shuffleId))

  /** The block managers of the executors that run tasks (the driver's, in local mode). */
  private def taskExecutors: Seq[BlockManagerId] =
    sc.env.blockManager.master.getMemoryStatus.keys.filter(a => !a.isDriver || sc.isLocal).toSeq

  /**
   * The handle of `dependency`'s shuffle. What it says of the shuffle beyond Spark's dependency
   * comes from that dependency alone: an RDD shuffle's map-side combine, or the plugin's SQL
   * exchange's [[AdaptiveShuffleDependency]].
   */
  def handle[K, V, C](
      shuffleId: Int,
      dependency: ShuffleDependency[K, V, C],
      writeHandle: ShuffleHandle): AdaptiveShuffleHandle[K, V, C] = {
    val accumulator = new FetchMetricsAccumulator
    sc.register(accumulator, FetchMetricsAccumulator.NamePrefix + shuffleId)
    val numPartitions = dependency.partitioner.numPartitions
    reducers.put(shuffleId, numPartitions)
    val (spec, reducedAtOwners, coPartitionKey) = dependency match {
      case d: AdaptiveShuffleDependency[_, _, _] => (d.combine, d.reducedAtOwners, d.coPartitionKey)
      case d => (AggregatorCombine.of(d), false, None)
    }
    val combine = spec.filter(_ => features.combine).map { s =>
      val executors = new CombiningExecutors
      sc.register(executors, CombiningExecutors.NamePrefix + shuffleId)
      LocalReduction(s, executors)
    }
    // A shuffle that combines is read where it was combined, so it is not pushed.
    val pushed = pushDriver.filter(_ => combine.isEmpty && pushVerdict.forall(_.decide(shuffleId)))
    val handle = new AdaptiveShuffleHandle(
      shuffleId,
      dependency,
      writeHandle,
      accumulator,
      dependency.rdd.partitions.length,
      combine,
      reducedAtOwners,
      () =>
        if (pushed.isDefined) Some(TableArithmetic.uniform(numPartitions, taskExecutors)) else None,
      () => taskExecutors.map(_.executorId).toSet)
    pushed.foreach { push =>
      push.register(
        shuffleId,
        handle.numMaps,
        numPartitions,
        () => handle.placedVersions,
        handle.addOwnerVersion)
      coPartitionKey.foreach(push.coPartitioned(shuffleId, _))
    }
    handle
  }

  /**
   * The counters so far, as [[python.PythonApi.metricsJson]] reports them: `push` (per shuffle,
   * what its owners had merged by its map stage's end and where its reduce tasks ran against
   * them, and under mode=auto whether it was pushed and why: "verdict", "why") is empty unless
   * mode=push or auto, `losses` unless push.reliability=replicated; `cpu` is each
   * shuffle's map and reduce stages' executor CPU ([[metrics.ShuffleCpu]]).
   */
  def metrics: Map[String, Any] = {
    val summaries = mergeSummaries
    val reads = ownerReads.fold(Map.empty[Int, Map[String, Any]])(_.snapshot())
    val verdicts = pushVerdict.fold(Map.empty[Int, Map[String, Any]])(_.snapshot())
    val push = (summaries.keySet ++ reads.keySet ++ verdicts.keySet).iterator.map { id =>
      id.toString -> (summaries.get(id).fold(Map.empty[String, Any])(_.toMap) ++
        reads.getOrElse(id, Map.empty) ++ verdicts.getOrElse(id, Map.empty))
    }.toMap
    fetchMetrics.snapshot() + ("push" -> push) + ("losses" -> losses) +
      ("cpu" -> shuffleCpu.snapshot())
  }

  /** In mode=push: what the owners had merged when each map stage ended. */
  def mergeSummaries: Map[Int, ShuffleMergeSummary] =
    pushDriver.fold(Map.empty[Int, ShuffleMergeSummary])(_.report)

  /** Under push.reliability=replicated: lost executors and their map outputs. */
  def losses: Map[String, Long] = pushDriver.fold(Map.empty[String, Long])(_.losses)

  def unregister(shuffleId: Int): Unit = {
    reducers.remove(shuffleId)
    pushDriver.foreach(_.remove(shuffleId))
    ucxRegistry.foreach(_.send(UcxRegistry.ShuffleRemoved(shuffleId)))
  }

  def stop(): Unit = pushDriver.foreach(_.stop())
}

private[spark] object DriverServices {

  /** The counters before any shuffle: those of no task. */
  def noMetrics: Map[String, Any] = MetricsReport.empty(new FetchCounters().toMap)
}
