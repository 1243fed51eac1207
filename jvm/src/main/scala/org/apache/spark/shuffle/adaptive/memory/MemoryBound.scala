package org.apache.spark.shuffle.adaptive.memory

import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.SparkConf
import org.apache.spark.internal.config.{EXECUTOR_MEMORY, OptionalConfigEntry}
import org.apache.spark.shuffle.adaptive.config.AdaptiveShuffleConf.DefaultStoreFraction

/**
 * The bound on one executor's in-memory shuffle data: bytes are reserved before they are copied
 * in, so the store never holds more than `capacity`. Thread-safe.
 */
private[spark] final class MemoryBound(val capacity: Long) {
  private[this] val usedBytes = new AtomicLong
  private[this] val highWaterBytes = new AtomicLong

  def used: Long = usedBytes.get
  def highWater: Long = highWaterBytes.get

  /** Reserves `bytes` if they fit; false (nothing reserved) if they do not. */
  def reserve(bytes: Long): Boolean = {
    var current = usedBytes.get
    while (current + bytes <= capacity) {
      if (usedBytes.compareAndSet(current, current + bytes)) {
        highWaterBytes.accumulateAndGet(current + bytes, math.max)
        return true
      }
      current = usedBytes.get
    }
    false
  }

  def release(bytes: Long): Unit = usedBytes.addAndGet(-bytes)
}

private[spark] object MemoryBound {

  /**
   * An executor store's capacity: `key` when set, else a fraction of the executor's memory (push's
   * owners and local reduction each size their store so).
   */
  def capacity(conf: SparkConf, key: OptionalConfigEntry[Long]): Long = conf
    .get(key)
    .getOrElse((conf.get(EXECUTOR_MEMORY) * 1024 * 1024 * DefaultStoreFraction).toLong)
}
