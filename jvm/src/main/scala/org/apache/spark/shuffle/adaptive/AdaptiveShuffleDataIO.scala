package org.apache.spark.shuffle.adaptive

import java.util.{Map => JMap}

import org.apache.spark.SparkConf
import org.apache.spark.shuffle.api.{ShuffleDataIO, ShuffleDriverComponents, ShuffleExecutorComponents}
import org.apache.spark.shuffle.sort.io.LocalDiskShuffleDataIO
import org.apache.spark.shuffle.adaptive.config.Features

/**
 * `spark.shuffle.sort.io.plugin.class` for `push.reliability=replicated`: map outputs are
 * written and cleaned up by Spark's local-disk implementation, as without it; the driver's
 * components also tell Spark that the shuffle's storage is reliable, because every map output
 * is merged at other executors too. Spark then keeps a lost executor's map outputs registered
 * (and does not rerun them, nor require the external shuffle service or shuffle tracking for
 * dynamic allocation); the plugin's driver unregisters those it does not hold elsewhere
 * ([[push.driver.LostMapOutputs]]).
 */
class AdaptiveShuffleDataIO(conf: SparkConf) extends ShuffleDataIO {

  private[this] val disk = new LocalDiskShuffleDataIO(conf)

  override def executor(): ShuffleExecutorComponents = disk.executor()

  override def driver(): ShuffleDriverComponents = {
    val components = disk.driver()
    val reliable = Features.reliableStorage(conf)
    new ShuffleDriverComponents {
      override def initializeApplication(): JMap[String, String] =
        components.initializeApplication()
      override def cleanupApplication(): Unit = components.cleanupApplication()
      override def registerShuffle(shuffleId: Int): Unit = components.registerShuffle(shuffleId)
      override def removeShuffle(shuffleId: Int, blocking: Boolean): Unit =
        components.removeShuffle(shuffleId, blocking)
      override def supportsReliableStorage(): Boolean = reliable
    }
  }
}
