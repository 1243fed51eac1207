package org.apache.spark.shuffle.adaptive.push.map

/**
 * The bound on what one executor has waiting to be pushed: at most `capacity` bytes of
 * committed map outputs. A map output's blocks are taken in order while they fit, as a store
 * takes them ([[Admission]]); the rest stay in its file for reduce tasks to fetch. Thread-safe.
 */
private[push] final class PushQueue(val capacity: Long) {

  private[this] var queued = 0L
  private[this] var highWater = 0L
  private[this] var refused = 0L

  /** Takes the first blocks of `sizes` that fit and answers how many. */
  def offer(sizes: Seq[Long]): Int = synchronized {
    val taken = Admission.accepted(queued, capacity, sizes)
    val bytes = sizes.iterator.take(taken).sum
    queued += bytes
    highWater = math.max(highWater, queued)
    refused += sizes.iterator.drop(taken).sum
    taken
  }

  /** `bytes` taken earlier were pushed, or given up. */
  def done(bytes: Long): Unit = synchronized { queued -= bytes }

  def bytesQueued: Long = synchronized(queued)

  /** The most bytes ever queued at once. */
  def bytesHighWater: Long = synchronized(highWater)

  /** Bytes the queue had no room for, left to be fetched from their files. */
  def bytesRefused: Long = synchronized(refused)
}
