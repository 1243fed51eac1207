package org.apache.spark.shuffle.adaptive.config

import java.util.Locale

import org.apache.spark.internal.config.{ConfigBuilder, ConfigEntry, OptionalConfigEntry}
import org.apache.spark.network.util.ByteUnit

/**
 * Every configuration key of the plugin, declared once. `conf/configuration.md` is generated
 * from [[entries]] (see ConfigurationDocSuite) and the Python package validates against it.
 */
private[spark] object AdaptiveShuffleConf {

  val Prefix = "spark.shuffle.adaptive."

  val FetchOrders: Seq[String] = Seq("adaptive", "naive", "pairwise")

  val FETCH_ORDER: ConfigEntry[String] =
    ConfigBuilder(Prefix + "fetch.order")
      .doc("Which remote executor a reduce task asks next. 'adaptive': the source with the " +
        "lowest score (see fetch.score.*), ties broken by a circular order of executors that " +
        "starts after the task's own, with requests formed at send time to about one in-flight " +
        "increment. 'naive': Spark's order, requests planned up front and sent in random " +
        "order. 'pairwise': step k fetches only from the executor k places before this one in " +
        "the circular order, one source at a time (CSA-style exchange). In every order a " +
        "request leaves only if it fits under the task's limit with what it has in flight, " +
        "or when nothing is in flight.")
      .version("0.1.0")
      .stringConf
      .transform(_.toLowerCase(Locale.ROOT))
      .checkValues(FetchOrders.toSet)
      .createWithDefault("adaptive")

  val FETCH_IN_FLIGHT_INCREMENT: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "fetch.inFlightIncrement")
      .doc("The in-flight increment: the size one remote request aggregates blocks up to (a " +
        "block is never split, so a larger block travels alone), and the step by which the " +
        "elastic limit shrinks and grows. Unset means the hard limit / 5, the request size of " +
        "Spark's own reader. Must not exceed the hard limit.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .checkValue(v => v > 0 && v <= Int.MaxValue, "must be a positive size of at most 2g")
      .createOptional

  val FETCH_MAX_IN_FLIGHT: OptionalConfigEntry[Long] =
    ConfigBuilder(Prefix + "fetch.maxInFlight")
      .doc("The hard in-flight limit of one reduce task: bytes requested and not yet consumed. " +
        "The elastic limit moves between the in-flight increment and this. Unset means " +
        "spark.reducer.maxSizeInFlight.")
      .version("0.1.0")
      .bytesConf(ByteUnit.BYTE)
      .checkValue(v => v > 0, "must be a positive size")
      .createOptional

  val FETCH_ELASTIC: ConfigEntry[Boolean] =
    ConfigBuilder(Prefix + "fetch.elastic.enabled")
      .doc("Whether each reduce task adapts its in-flight limit to how fast it consumes: it " +
        "starts at the hard limit, shrinks by one increment after a wait much shorter than its " +
        "average wait, and grows by one increment otherwise. Off: the hard limit throughout.")
      .version("0.1.0")
      .booleanConf
      .createWithDefault(true)

  val FETCH_ELASTIC_SHRINK_BELOW: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "fetch.elastic.shrinkBelow")
      .doc("The elastic limit shrinks after a wait of at most this fraction of the task's " +
        "moving-average wait (a task that never waited shrinks too).")
      .version("0.1.0")
      .doubleConf
      .checkValue(v => v >= 0 && v <= 1, "must be between 0 and 1")
      .createWithDefault(0.5)

  val FETCH_ELASTIC_GROW_ABOVE: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "fetch.elastic.growAbove")
      .doc("The elastic limit grows after a wait longer than this fraction of the task's " +
        "moving-average wait. Between shrinkBelow and growAbove it stays; equal values (the " +
        "default) give the paper's rule: shrink when much shorter, grow otherwise.")
      .version("0.1.0")
      .doubleConf
      .checkValue(v => v >= 0 && !v.isInfinite, "must be a finite number >= 0")
      .createWithDefault(0.5)

  val FETCH_WAIT_WINDOW: ConfigEntry[Int] =
    ConfigBuilder(Prefix + "fetch.waitWindow")
      .doc("How many recent waits the moving averages cover: per remote executor (shared by " +
        "the reduce tasks of an executor) and per task (for the elastic limit).")
      .version("0.1.0")
      .intConf
      .checkValue(v => v >= 1 && v <= 100000, "must be between 1 and 100000")
      .createWithDefault(16)

  val FETCH_SCORE_LOAD_WEIGHT: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "fetch.score.loadWeight")
      .doc("Weight of load in the adaptive source score: score = loadWeight * (bytes this " +
        "executor's reduce tasks have in flight to the source / in-flight increment) + " +
        "waitWeight * (moving-average ms tasks waited for the source's blocks). The lowest " +
        "score is asked next.")
      .version("0.1.0")
      .doubleConf
      .checkValue(v => v >= 0 && !v.isInfinite, "must be a finite number >= 0")
      .createWithDefault(1.0)

  val FETCH_SCORE_WAIT_WEIGHT: ConfigEntry[Double] =
    ConfigBuilder(Prefix + "fetch.score.waitWeight")
      .doc("Weight of responsiveness in the adaptive source score, per millisecond of " +
        "moving-average wait (see fetch.score.loadWeight). The default makes 10 ms of average " +
        "wait count as much as one more increment in flight.")
      .version("0.1.0")
      .doubleConf
      .checkValue(v => v >= 0 && !v.isInfinite, "must be a finite number >= 0")
      .createWithDefault(0.1)

  val TESTING_SERVE_DELAY: ConfigEntry[String] =
    ConfigBuilder(Prefix + "testing.serveDelay")
      .doc("TESTING ONLY, off by default: reproduces a slow node on one machine. " +
        "'executorId:millis[,executorId:millis...]': that executor sleeps that long before " +
        "it hands out each of its shuffle blocks (to other executors and to its own reduce " +
        "tasks). Honoured by AdaptiveShuffleManager and by testing.SlowServingSortShuffleManager " +
        "(Spark's sort shuffle plus this delay), so both can be compared on the same slow node.")
      .version("0.1.0")
      .stringConf
      .checkValue(v => v.isEmpty || v.split(",").forall(_.trim.matches("[^:,\\s]+:[0-9]+")),
        "must be empty or 'executorId:millis' pairs separated by commas")
      .createWithDefault("")

  /** In the order the documentation lists them. */
  val entries: Seq[ConfigEntry[_]] = Seq(
    FETCH_ORDER, FETCH_IN_FLIGHT_INCREMENT, FETCH_MAX_IN_FLIGHT, FETCH_ELASTIC,
    FETCH_ELASTIC_SHRINK_BELOW, FETCH_ELASTIC_GROW_ABOVE, FETCH_WAIT_WINDOW,
    FETCH_SCORE_LOAD_WEIGHT, FETCH_SCORE_WAIT_WEIGHT, TESTING_SERVE_DELAY)
}
