package org.apache.spark.shuffle.adaptive.sql

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.SparkEnv
import org.apache.spark.internal.Logging
import org.apache.spark.shuffle.sort.SortShuffleManager
import org.apache.spark.sql.catalyst.plans.physical.{ClusteredDistribution, HashPartitioning}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.trees.TreeNodeTag
import org.apache.spark.sql.execution.{SparkPlan, UnaryExecNode}
import org.apache.spark.sql.execution.exchange.{ENSURE_REQUIREMENTS, ShuffleExchangeExec}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager
import org.apache.spark.shuffle.adaptive.compat.{ConfiguredShuffleManager, SqlExchanges}
import org.apache.spark.shuffle.adaptive.config.Features
import org.apache.spark.shuffle.adaptive.combine.sql.SqlCombine

/**
 * Puts an [[AdaptiveShuffleExchangeExec]] in the place of Spark's exchanges when the plugin is
 * the shuffle manager: with local reduction on, the exchanges Spark added under an aggregate's
 * next step to shuffle a partial aggregate's rows by their keys, which then combine; in
 * mode=push every other exchange of a hash partitioning, so that reduce tasks run where their
 * partitions were merged. Every other exchange is left as it is, tagged with the reason
 * ([[KeptBecause]]), which `explain()` and the SQL tab show ([[ExchangesExplained]]).
 *
 * The plugin's exchanges whose partitions i one task reads together (the sides of a join that
 * needs its children clustered, with nothing but narrow steps in between) get one
 * `coPartitionKey`, so that the driver gives them one owner per partition.
 */
private[sql] object PluginExchanges extends Rule[SparkPlan] with Logging {

  private def features: Option[Features] = Option(SparkEnv.get).collect {
    case env if ConfiguredShuffleManager.of(env).isInstanceOf[AdaptiveShuffleManager] =>
      Features(env.conf)
  }

  /** Why an exchange on the plugin's shuffle manager is Spark's. */
  val KeptBecause = TreeNodeTag[String]("pyspark-shuffle.keptBecause")

  private[this] val keys = new AtomicLong

  // Spark SQL's keys (since 4.1) for checksums of a shuffle's rows, by name: older releases
  // lack them.
  private val RowChecksums = "spark.sql.shuffle.orderIndependentChecksum.enabled"
  private val FullRetryOnMismatch =
    "spark.sql.shuffle.orderIndependentChecksum.enableFullRetryOnMismatch"

  override def apply(plan: SparkPlan): SparkPlan = features match {
    case Some(m) if m.push || m.combine =>
      val replaced = replace(plan, m)
      if (m.push) coPartition(replaced) else replaced
    case _ => plan
  }

  private def replace(plan: SparkPlan, m: Features): SparkPlan =
    plan.transformUp {
      case e: ShuffleExchangeExec if SqlExchanges.onShuffleManager(e) =>
        choose(e, m) match {
          case Right((hash, combining)) =>
            val replaced = AdaptiveShuffleExchangeExec(
              hash,
              e.child,
              e.shuffleOrigin,
              e.advisoryPartitionSize,
              combining)
            replaced.copyTagsFrom(e)
            replaced
          case Left(reason) =>
            e.setTagValue(KeptBecause, reason)
            e
        }
    }

  /**
   * The plugin's exchange of `e`'s hash partitioning, and whether its rows combine; or why `e`
   * stays Spark's.
   */
  private def choose(
      e: ShuffleExchangeExec,
      m: Features): Either[String, (HashPartitioning, Boolean)] =
    e.outputPartitioning match {
      case hash: HashPartitioning =>
        serializedWriterTakes(hash).flatMap { _ =>
          val combines =
            if (!m.combine) Left(m.combineOff.get)
            else if (e.shuffleOrigin != ENSURE_REQUIREMENTS)
              Left(s"its rows are not an aggregate's to combine (a ${e.shuffleOrigin})")
            else SqlCombine.explained(e.child)
          combines match {
            case Right(_) => Right((hash, true))
            case Left(_) if m.push => Right((hash, false))
            case Left(why) =>
              logInfo(s"Exchange ${e.outputPartitioning} stays Spark's: $why")
              Left(why)
          }
        }
      case other =>
        Left(
          s"${other.getClass.getSimpleName.stripSuffix("$")}: the plugin's exchange takes hash " +
            "partitionings (the shuffle manager still pushes and merges its blocks in mode=push)")
    }

  /**
   * Spark's exchange copies every row before the shuffle under any shuffle manager but its own
   * sort shuffle, whose serialized writer takes a row before the next; the plugin's exchange
   * copies none, so it takes only what that writer would: up to its partition limit, and none of
   * the checksums Spark SQL computes of the rows themselves, which only its exchange makes.
   */
  private def serializedWriterTakes(hash: HashPartitioning): Either[String, Unit] = {
    val sql = SQLConf.get
    if (hash.numPartitions > SortShuffleManager.MAX_SHUFFLE_OUTPUT_PARTITIONS_FOR_SERIALIZED_MODE)
      Left(s"${hash.numPartitions} partitions: more than Spark's serialized writer takes")
    else
      Seq(RowChecksums, FullRetryOnMismatch)
        .find(sql.getConfString(_, "false").toBoolean)
        .map(key => Left(s"$key=true: Spark's exchange computes the rows' checksums"))
        .getOrElse(Right(()))
  }

  /** The plugin's exchanges a join reads partition by partition, each group given a key. */
  private def coPartition(plan: SparkPlan): SparkPlan = plan.transformUp {
    case node if readsTogether(node) =>
      val key = keys.incrementAndGet()
      node.withNewChildren(node.children.map(keyed(_, key)))
  }

  private def readsTogether(node: SparkPlan): Boolean = {
    val required = node.requiredChildDistribution
    node.children.size >= 2 && required.size == node.children.size &&
    required.forall(_.isInstanceOf[ClusteredDistribution]) && {
      val exchanges = node.children.flatMap(exchangeBelow)
      exchanges.size >= 2 && exchanges.map(_.outputPartitioning.numPartitions).distinct.size == 1
    }
  }

  // Narrow steps (sorts, projections, aggregates over the exchange's partitions) keep partition
  // i of the exchange in partition i of their output.
  private def exchangeBelow(plan: SparkPlan): Option[AdaptiveShuffleExchangeExec] = plan match {
    case e: AdaptiveShuffleExchangeExec => Some(e)
    case u: UnaryExecNode
        if u.outputPartitioning.numPartitions == u.child.outputPartitioning.numPartitions =>
      exchangeBelow(u.child)
    case _ => None
  }

  /** `plan` with the exchange below its narrow steps given `key`. */
  private def keyed(plan: SparkPlan, key: Long): SparkPlan = plan match {
    case e: AdaptiveShuffleExchangeExec =>
      // AQE finds each node's logical plan by its tags.
      val withKey = e.copy(coPartitionKey = Some(key))
      withKey.copyTagsFrom(e)
      withKey
    case u: UnaryExecNode if exchangeBelow(u).isDefined =>
      u.withNewChildren(Seq(keyed(u.child, key)))
    case other => other
  }
}
