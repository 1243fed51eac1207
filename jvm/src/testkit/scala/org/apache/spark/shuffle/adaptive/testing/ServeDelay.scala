package org.apache.spark.shuffle.adaptive.testing

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.internal.config.{ConfigBuilder, ConfigEntry}

/**
 * A slow node on one machine, for tests and benchmarks: the key below, which Spark keeps apart
 * from the user settings (internal, undocumented), and the resolvers that honour it.
 */
private[spark] object ServeDelay {

  val Key: ConfigEntry[String] =
    ConfigBuilder("spark.shuffle.adaptive.testing.serveDelay")
      .internal()
      .doc(
        "'executorId:millis[,executorId:millis...]': that executor sleeps that long before " +
          "it hands out each of its shuffle blocks (to other executors and to its own reduce " +
          "tasks). Honoured by SlowServingAdaptiveShuffleManager (the plugin plus this delay, " +
          "which pyspark_shuffle.configure chooses when the key is set) and by " +
          "SlowServingSortShuffleManager (Spark's sort shuffle plus this delay), so both can be " +
          "compared on the same slow node. A named executor also counts the blocks its block " +
          "server hands to other executors (a delay of 0 only counts).")
      .version("0.1.0")
      .stringConf
      .checkValue(
        v => v.trim.isEmpty || v.split(",", -1).forall(_.trim.matches("[^:,\\s]+:[0-9]+")),
        "'' or 'executorId:millis' pairs separated by commas, e.g. '1:50'")
      .createWithDefault("")

  /** The delay per served block for `executorId`, None when it is not named. */
  def millisFor(conf: SparkConf, executorId: String): Option[Long] =
    conf
      .get(Key)
      .split(",")
      .iterator
      .map(_.trim)
      .filter(_.nonEmpty)
      .map { pair =>
        val Array(id, millis) = pair.split(":")
        id -> millis.toLong
      }
      .collectFirst { case (id, millis) if id == executorId => millis }

  /**
   * `resolver` itself, or on a named executor a resolver that reads the same shuffle files but
   * sleeps before handing out each block (and counts those it serves to other executors).
   */
  def resolverFor(conf: SparkConf, resolver: IndexShuffleBlockResolver): IndexShuffleBlockResolver =
    Option(SparkEnv.get).flatMap(env => millisFor(conf, env.executorId)) match {
      case Some(millis) => new DelayedShuffleBlockResolver(conf, millis)
      case None => resolver
    }
}
