package org.apache.spark.shuffle.adaptive.config

import org.apache.spark.SparkConf
import org.apache.spark.internal.config.{SHUFFLE_SERVICE_ENABLED, SHUFFLE_USE_OLD_FETCH_PROTOCOL, STORAGE_DECOMMISSION_ENABLED, STORAGE_DECOMMISSION_SHUFFLE_BLOCKS_ENABLED}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{COMBINE_ENABLED, MODE, Mode, PUSH_RELIABILITY, Reliability, TRANSPORT, Transport}

/**
 * What runs, decided once from the configuration; the combinations of keys the plugin refuses
 * ([[KeyCombinations]]) are refused here, with the keys involved and the values allowed.
 *
 * @param push        mode=push or auto: map outputs may be merged at their partitions' owners.
 * @param auto        mode=auto: each shuffle is pushed or not by [[push.driver.PushVerdict]].
 * @param replicated  push.reliability=replicated: every pushed block counts as its map output.
 * @param ucxMayRun   a transport other than Netty was asked for, so UCX may start.
 * @param combineOff  why local reduction of shuffles whose records combine is off, where it is
 *                    ([[Features.combineOffBecause]]).
 */
private[spark] final case class Features(
    push: Boolean,
    auto: Boolean,
    replicated: Boolean,
    ucxMayRun: Boolean,
    combineOff: Option[String]) {

  /** Local reduction of shuffles whose records combine. */
  def combine: Boolean = combineOff.isEmpty
}

private[spark] object Features {

  /**
   * Whether Spark may keep a lost executor's map outputs: they are merged elsewhere. Asked by
   * the ShuffleDataIO, which the manager's checks in [[apply]] do not stop from answering no.
   */
  def reliableStorage(conf: SparkConf): Boolean =
    conf.get(MODE) == Mode.Push && conf.get(PUSH_RELIABILITY) == Reliability.Replicated

  def apply(conf: SparkConf): Features = {
    KeyCombinations.All.foreach {
      case needs: Needs => needs.check(conf)
      case _ =>
    }
    Features(
      push = conf.get(MODE) != Mode.Pull,
      auto = conf.get(MODE) == Mode.Auto,
      replicated = conf.get(PUSH_RELIABILITY) == Reliability.Replicated,
      ucxMayRun = conf.get(TRANSPORT) != Transport.Netty,
      combineOff = combineOffBecause(conf))
  }

  /**
   * Why local reduction is off, if it is. Folded records are the only copy of what they hold
   * (the map outputs' files hold the rest), kept in their executor's memory: so it is off where
   * a map output must be whole in its files: under push.reliability=replicated, where every
   * shuffle is pushed so that its map outputs are held elsewhere; with the external shuffle
   * service, which serves map outputs from their files after their executor is gone; where
   * decommissioning executors migrate their shuffle files; and under the old fetch protocol,
   * which names a map task's attempts alike (it exists for old external shuffle services).
   */
  def combineOffBecause(conf: SparkConf): Option[String] =
    Seq(
      !conf.get(COMBINE_ENABLED) -> s"${COMBINE_ENABLED.key}=false",
      (conf.get(PUSH_RELIABILITY) == Reliability.Replicated) ->
        s"${PUSH_RELIABILITY.key}=${Reliability.Replicated} pushes every shuffle",
      conf.get(SHUFFLE_SERVICE_ENABLED) ->
        s"${SHUFFLE_SERVICE_ENABLED.key}=true: the external shuffle service serves whole files",
      (conf.get(STORAGE_DECOMMISSION_ENABLED) &&
        conf.get(STORAGE_DECOMMISSION_SHUFFLE_BLOCKS_ENABLED)) ->
        (s"${STORAGE_DECOMMISSION_SHUFFLE_BLOCKS_ENABLED.key}=true: decommissioning migrates " +
          "whole files"),
      conf.get(SHUFFLE_USE_OLD_FETCH_PROTOCOL) ->
        s"${SHUFFLE_USE_OLD_FETCH_PROTOCOL.key}=true names a map task's attempts alike")
      .collectFirst { case (true, why) =>
        s"local reduction is off ($why)"
      }
}
