package org.apache.spark.shuffle.adaptive.memory

/**
 * The memory one merge of a run's blocks takes: the caller reserved the run's bytes in `memory`
 * (each block's length is its own share), and a block that takes more (a chunk's buffer that
 * doubles) reserves the rest as it goes, while that fits. Not thread-safe: one merge's.
 */
private[spark] final class MemoryGrant(memory: MemoryBound) {
  private[this] var ofReserved = 0L

  /**
   * Takes `bytes` for a block of `length` bytes: up to `length` of them out of the caller's
   * reservation, the rest reserved in `memory`; false (nothing taken) if that does not fit.
   */
  def take(bytes: Long, length: Long): Boolean = {
    val own = math.min(bytes, length)
    val more = bytes - own
    (more <= 0 || memory.reserve(more)) && { ofReserved += own; true }
  }

  /** The bytes of the caller's reservation kept: it releases the rest. */
  def keptOfReserved: Long = ofReserved
}
