package org.apache.spark.shuffle.adaptive.compat

import org.apache.spark.SparkEnv
import org.apache.spark.shuffle.ShuffleManager

/** The shuffle manager `spark.shuffle.manager` names, as Spark instantiated it. */
private[spark] object ConfiguredShuffleManager {
  def of(env: SparkEnv): ShuffleManager = env.shuffleManager
}
