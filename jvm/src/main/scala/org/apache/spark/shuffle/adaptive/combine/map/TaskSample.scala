package org.apache.spark.shuffle.adaptive.combine.map

/**
 * The hashes of one judging map task's sampled keys, as it writes them ([[KeySample]]): each
 * key once, however many of its records the task writes (a fold counts keys, not records).
 */
private[combine] final class TaskSample {
  var hashes = new IntSet
  var level = 0

  /** Keeps `hash` if its key is in the sample; whether it is, and was not before. */
  def offer(hash: Int): Boolean = KeySample.inLevel(hash, level) && hashes.add(hash) && {
    if (hashes.size > KeySample.MaxTaskHashes) {
      level += 1
      val kept = new IntSet
      hashes.foreach(h => if (KeySample.inLevel(h, level)) kept.add(h))
      hashes = kept
    }
    KeySample.inLevel(hash, level)
  }
}
