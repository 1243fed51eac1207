package org.apache.spark.shuffle.adaptive.testing

import org.apache.spark.SparkConf
import org.apache.spark.shuffle.IndexShuffleBlockResolver
import org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager

/**
 * Testing only: the plugin honouring `spark.shuffle.adaptive.testing.serveDelay` (a slow node on
 * one machine), as [[SlowServingSortShuffleManager]] is Spark's sort shuffle honouring it.
 * `pyspark_shuffle.configure` chooses it when that key is set.
 */
private[spark] class SlowServingAdaptiveShuffleManager(conf: SparkConf)
    extends AdaptiveShuffleManager(conf) {

  override protected def mapOutputFiles(
      spark: IndexShuffleBlockResolver): IndexShuffleBlockResolver =
    ServeDelay.resolverFor(conf, spark)
}
