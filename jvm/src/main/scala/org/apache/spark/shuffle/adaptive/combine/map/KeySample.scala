package org.apache.spark.shuffle.adaptive.combine.map

/**
 * What judging looks keys up in ([[Verdict]]): the hashes of a sample of the keys the judging map
 * outputs of one round wrote on this executor. A key is in the sample of level l when the low l
 * bits of its hash, mixed, are 0 ([[KeySample.inLevel]]): one key in 2^l, the same keys in every
 * map output, so that looking up one map output's sample in another's counts the keys they share
 * in the sample. A map task samples every key until it has more than [[KeySample.MaxTaskHashes]],
 * then moves up a level ([[TaskSample]]); lookups are made at the higher level of the two. A hash
 * stands for its key: a collision counts as a key met once in billions, which no judgement
 * notices. Thread-safe.
 */
private[combine] final class KeySample {
  private[this] var round = -1
  private[this] var level = 0
  private[this] var hashes = new IntSet

  /**
   * Looks for `task`'s sample (of judging round `ofRound`) among those added before in the round,
   * then adds it: answers how many hashes were looked for (none while the round's sample is
   * empty) and how many found.
   */
  def probeAndAdd(ofRound: Int, task: TaskSample): (Long, Long) = synchronized {
    if (ofRound > round) {
      round = ofRound
      level = 0
      hashes = new IntSet
    }
    if (ofRound < round) (0L, 0L)
    else {
      if (task.level > level) {
        level = task.level
        val kept = new IntSet
        hashes.foreach(h => if (KeySample.inLevel(h, level)) kept.add(h))
        hashes = kept
      }
      val empty = hashes.isEmpty
      var probed, met = 0L
      task.hashes.foreach { h =>
        if (KeySample.inLevel(h, level)) {
          if (!empty) {
            probed += 1
            if (hashes.contains(h)) met += 1
          }
        }
      }
      // A new set, so that the snapshots running map tasks look keys up in stay as they were.
      val grown = hashes.copy()
      task.hashes.foreach(h => if (KeySample.inLevel(h, level)) grown.add(h))
      hashes = grown
      (probed, met)
    }
  }

  /**
   * The sample of round `ofRound` so far, to look a running map task's keys up in as it writes
   * them, with its level; none while it is empty. The set is never changed after.
   */
  def snapshot(ofRound: Int): Option[(IntSet, Int)] = synchronized {
    if (ofRound == round && !hashes.isEmpty) Some((hashes, level)) else None
  }

  /** Frees the sample: the round was decided. */
  def clear(): Unit = synchronized { hashes = new IntSet }
}

private[combine] object KeySample {

  /** Hashes a map task keeps before it keeps every other one fewer. */
  private[combine] val MaxTaskHashes = 1 << 16

  /** Whether a key of this hash is in the sample of `level`. */
  private[combine] def inLevel(hash: Int, level: Int): Boolean =
    (mix(hash) & ((1 << level) - 1)) == 0

  /**
   * Murmur3's finalizer: every bit of a hash moves every bit of the result, so that its low bits
   * can pick a sample or a slot even where keys share the hash's low bits (a reduce partition's
   * keys do: the partition is the hash modulo their number).
   */
  def mix(hash: Int): Int = {
    var h = hash
    h ^= h >>> 16
    h *= 0x85ebca6b
    h ^= h >>> 13
    h *= 0xc2b2ae35
    h ^= h >>> 16
    h
  }
}
