package org.apache.spark.shuffle.adaptive.testing

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.shuffle.ShuffleBlockResolver
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.TESTING_SERVE_DELAY

/** Reads `spark.shuffle.adaptive.testing.serveDelay` (testing only). */
private[spark] object ServeDelay {

  /** The delay per served block for `executorId`, 0 when it is not slowed. */
  def millisFor(conf: SparkConf, executorId: String): Long =
    conf.get(TESTING_SERVE_DELAY).split(",").iterator.map(_.trim).filter(_.nonEmpty)
      .map { pair =>
        val Array(id, millis) = pair.split(":")
        id -> millis.toLong
      }
      .collectFirst { case (id, millis) if id == executorId => millis }
      .getOrElse(0L)

  /**
   * `resolver` itself, or on a slowed executor a resolver that reads the same shuffle files but
   * sleeps before handing out each block.
   */
  def resolverFor(conf: SparkConf, resolver: ShuffleBlockResolver): ShuffleBlockResolver = {
    val millis = Option(SparkEnv.get).map(env => millisFor(conf, env.executorId)).getOrElse(0L)
    if (millis > 0) new DelayedShuffleBlockResolver(conf, millis) else resolver
  }
}
