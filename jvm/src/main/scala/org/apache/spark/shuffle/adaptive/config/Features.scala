package org.apache.spark.shuffle.adaptive.config

import org.apache.spark.SparkConf
import org.apache.spark.internal.config.SHUFFLE_SERVICE_ENABLED
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{COMBINE_ENABLED, MODE, Mode, PUSH_RELIABILITY, Reliability, TRANSPORT, Transport}

/**
 * What runs, decided once from the configuration; the combinations of keys the plugin refuses
 * ([[KeyCombinations]]) are refused here, with the keys involved and the values allowed.
 *
 * @param push        mode=push: map outputs are merged at their partitions' owners.
 * @param replicated  push.reliability=replicated: every pushed block counts as its map output.
 * @param ucxMayRun   a transport other than Netty was asked for, so UCX may start.
 * @param combine     local reduction of shuffles whose records combine; not under
 *                    push.reliability=replicated, where every shuffle is pushed, so that its
 *                    map outputs are held elsewhere, nor with the external shuffle service,
 *                    which serves map outputs from their files only.
 */
private[spark] final case class Features(
    push: Boolean,
    replicated: Boolean,
    ucxMayRun: Boolean,
    combine: Boolean)

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
    val replicated = conf.get(PUSH_RELIABILITY) == Reliability.Replicated
    Features(
      push = conf.get(MODE) == Mode.Push,
      replicated = replicated,
      ucxMayRun = conf.get(TRANSPORT) != Transport.Netty,
      combine = conf.get(COMBINE_ENABLED) && !replicated && !conf.get(SHUFFLE_SERVICE_ENABLED))
  }
}
