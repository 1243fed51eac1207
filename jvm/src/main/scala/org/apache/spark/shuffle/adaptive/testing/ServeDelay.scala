package org.apache.spark.shuffle.adaptive.testing

import org.apache.spark.{SparkConf, SparkEnv}
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.TESTING_SERVE_DELAY

/** Reads `spark.shuffle.adaptive.testing.serveDelay` (testing only). */
private[spark] object ServeDelay {

  /** The delay per served block for `executorId`, None when it is not named. */
  def millisFor(conf: SparkConf, executorId: String): Option[Long] =
    conf
      .get(TESTING_SERVE_DELAY)
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
