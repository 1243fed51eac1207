package org.apache.spark.shuffle.adaptive.compat

import org.apache.spark.SparkEnv
import org.apache.spark.shuffle.ShuffleManager

/**
 * The shuffle manager `spark.shuffle.manager` names, as Spark instantiated it. Spark 4.3 keeps a
 * blocking and a pipelined manager side by side; the configured one is the blocking manager.
 */
private[spark] object ConfiguredShuffleManager {
  def of(env: SparkEnv): ShuffleManager = env.blockingShuffleManager
}
