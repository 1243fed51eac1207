package org.apache.spark.shuffle.adaptive.memory

import java.util.concurrent.atomic.AtomicLong

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
