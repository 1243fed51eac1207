package org.apache.spark.shuffle.adaptive.config

import org.apache.spark.SparkConf
import org.apache.spark.internal.config.{SHUFFLE_IO_PLUGIN_CLASS, SHUFFLE_SERVICE_ENABLED}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.{COMBINE_ENABLED, MODE, Mode, PUSH_RELIABILITY, ReliableDataIO, Reliability, TRANSPORT, Transport}

/**
 * What runs, decided once from the configuration; the combinations the plugin refuses are
 * refused here, with the keys involved and the values allowed.
 *
 * @param push        mode=push: map outputs are merged at their partitions' owners.
 * @param replicated  push.reliability=replicated: every pushed block counts as its map output.
 * @param ucxMayRun   a transport other than Netty was asked for, so UCX may start.
 * @param combine     local reduction of shuffles whose records combine; not under
 *                    push.reliability=replicated, where every shuffle is pushed, so that its
 *                    map outputs are held elsewhere, nor with the external shuffle service,
 *                    which serves map outputs from their files only.
 */
private[spark] final case class Modes(
    push: Boolean,
    replicated: Boolean,
    ucxMayRun: Boolean,
    combine: Boolean)

private[spark] object Modes {

  /**
   * Whether Spark may keep a lost executor's map outputs: they are merged elsewhere. Asked by
   * the ShuffleDataIO, which the manager's checks in [[apply]] do not stop from answering no.
   */
  def reliableStorage(conf: SparkConf): Boolean =
    conf.get(MODE) == Mode.Push && conf.get(PUSH_RELIABILITY) == Reliability.Replicated

  def apply(conf: SparkConf): Modes = {
    val mode = conf.get(MODE)
    require(
      !(mode != Mode.Pull && conf.get(SHUFFLE_SERVICE_ENABLED)),
      s"${MODE.key}=$mode needs " +
        s"${SHUFFLE_SERVICE_ENABLED.key}=false: the external shuffle service serves files only")
    val replicated = conf.get(PUSH_RELIABILITY) == Reliability.Replicated
    val ioPlugin = conf.get(SHUFFLE_IO_PLUGIN_CLASS)
    require(
      !replicated || mode == Mode.Push && ioPlugin == ReliableDataIO,
      s"${PUSH_RELIABILITY.key}=${Reliability.Replicated} needs ${MODE.key}=${Mode.Push} and " +
        s"${SHUFFLE_IO_PLUGIN_CLASS.key}=$ReliableDataIO (pyspark_shuffle.configure sets it), " +
        s"which tells Spark that a lost executor's map outputs are held elsewhere; got " +
        s"${MODE.key}=$mode and ${SHUFFLE_IO_PLUGIN_CLASS.key}=$ioPlugin; " +
        s"allowed values of ${PUSH_RELIABILITY.key} without them: ${Reliability.None}")
    Modes(
      push = mode == Mode.Push,
      replicated = replicated,
      ucxMayRun = conf.get(TRANSPORT) != Transport.Netty,
      combine = conf.get(COMBINE_ENABLED) && !replicated && !conf.get(SHUFFLE_SERVICE_ENABLED))
  }
}
