package org.apache.spark.shuffle.adaptive.config

import java.util.Locale

import org.apache.spark.SparkConf
import org.apache.spark.internal.config.{REDUCER_MAX_SIZE_IN_FLIGHT, SHUFFLE_IO_PLUGIN_CLASS, SHUFFLE_SERVICE_ENABLED}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf._

/**
 * A rule across keys, declared once: the JVM applies it as it reads the configuration
 * ([[Features]], [[org.apache.spark.shuffle.adaptive.flow.FlowSettings]]), and Python's
 * `configure()` before a JVM starts (`conf_keys.json` carries it, as it carries each key's rule).
 * A refusal names the keys and what is allowed.
 */
private[config] sealed trait KeyCombination {

  /** What `conf_keys.json` says of it. */
  def toMap: Map[String, Any]
}

/**
 * `key` at one of `values` needs `other` at `otherValue`, because `why`; an unset key has its
 * default. With `setByConfigure`, Python's `configure()` sets `other` where it is unset.
 */
private[config] final case class Needs(
    key: String,
    keyDefault: String,
    values: Seq[String],
    allowedWithout: Seq[String],
    other: String,
    otherDefault: String,
    otherValue: String,
    why: String,
    setByConfigure: Boolean = false)
    extends KeyCombination {

  def check(conf: SparkConf): Unit = {
    val value = conf.get(key, keyDefault).trim.toLowerCase(Locale.ROOT)
    val have = conf.get(other, otherDefault).trim
    require(
      !values.contains(value) || have.equalsIgnoreCase(otherValue),
      s"$key=$value needs $other=$otherValue: $why; got $other=$have; allowed values of " +
        s"$key without it: ${allowedWithout.mkString(", ")}")
  }

  override def toMap: Map[String, Any] = Map(
    "kind" -> "needs",
    "key" -> key,
    "key_default" -> keyDefault,
    "values" -> values,
    "allowed_without" -> allowedWithout,
    "other" -> other,
    "other_default" -> otherDefault,
    "other_value" -> otherValue,
    "why" -> why,
    "set_by_configure" -> setByConfigure)
}

/**
 * `key`, a size, is at most `limit`'s size, or where that is unset `fallback`'s (a Spark key
 * whose sizes without a unit are MiB, default `fallbackDefault`).
 */
private[config] final case class AtMost(
    key: String,
    limit: String,
    fallback: String,
    fallbackDefault: String)
    extends KeyCombination {

  override def toMap: Map[String, Any] = Map(
    "kind" -> "at_most",
    "key" -> key,
    "limit" -> limit,
    "fallback" -> fallback,
    "fallback_default" -> fallbackDefault)
}

private[spark] object KeyCombinations {

  val PushWithoutShuffleService: Needs = Needs(
    MODE.key,
    Mode.Pull,
    Mode.All.filterNot(_ == Mode.Pull),
    Seq(Mode.Pull),
    SHUFFLE_SERVICE_ENABLED.key,
    SHUFFLE_SERVICE_ENABLED.defaultValueString,
    "false",
    "the external shuffle service serves map-output files only")

  val ReplicatedNeedsPush: Needs = Needs(
    PUSH_RELIABILITY.key,
    Reliability.None,
    Seq(Reliability.Replicated),
    Seq(Reliability.None),
    MODE.key,
    Mode.Pull,
    Mode.Push,
    "the copies that make a map output safe are the merged ones")

  val ReplicatedNeedsDataIO: Needs = Needs(
    PUSH_RELIABILITY.key,
    Reliability.None,
    Seq(Reliability.Replicated),
    Seq(Reliability.None),
    SHUFFLE_IO_PLUGIN_CLASS.key,
    SHUFFLE_IO_PLUGIN_CLASS.defaultValueString,
    ReliableDataIO,
    "the plugin's ShuffleDataIO tells Spark that a lost executor's map outputs are held " +
      "elsewhere (pyspark_shuffle.configure sets it)",
    setByConfigure = true)

  val IncrementWithinLimit: AtMost = AtMost(
    FETCH_IN_FLIGHT_INCREMENT.key,
    FETCH_MAX_IN_FLIGHT.key,
    REDUCER_MAX_SIZE_IN_FLIGHT.key,
    REDUCER_MAX_SIZE_IN_FLIGHT.defaultValueString)

  val All: Seq[KeyCombination] =
    Seq(PushWithoutShuffleService, ReplicatedNeedsPush, ReplicatedNeedsDataIO, IncrementWithinLimit)
}
