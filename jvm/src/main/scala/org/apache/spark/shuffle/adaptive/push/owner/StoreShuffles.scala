package org.apache.spark.shuffle.adaptive.push.owner

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import scala.jdk.CollectionConverters._

/**
 * The shuffles one merge store holds: a shuffle's [[ShuffleMerges]] is made with its first run
 * and goes, with everything it holds, when the shuffle is removed. A removed shuffle stays
 * removed: runs of it that arrive later find nothing to merge into and are dropped.
 *
 * Locks: the registry is a concurrent map. Each [[ShuffleMerges]] is guarded by its own monitor,
 * which every part of the store holds while it reads or changes that shuffle, and takes no other
 * lock under it.
 */
private[owner] final class StoreShuffles(sslChunkSize: Int) {
  private[this] val shuffles = new ConcurrentHashMap[Int, ShuffleMerges]

  /**
   * Bytes of direct memory the chunks of every shuffle hold, with those still being served after
   * their chunk left memory ([[Arena]]).
   */
  val direct = new AtomicLong
  private[this] val removed = ConcurrentHashMap.newKeySet[Integer]()

  /** The shuffle's merges, made now if it has none yet; none once it was removed. */
  def merging(shuffleId: Int): Option[ShuffleMerges] = Option(
    shuffles
      .computeIfAbsent(
        shuffleId,
        id => if (removed.contains(id)) null else new ShuffleMerges(direct, sslChunkSize)))

  def get(shuffleId: Int): Option[ShuffleMerges] = Option(shuffles.get(shuffleId))

  def all: Seq[(Int, ShuffleMerges)] = shuffles.asScala.toSeq

  def ids: Seq[Int] = shuffles.keySet.asScala.toSeq.map(_.intValue)

  /** Takes the shuffle out for good: the caller releases what it held. */
  def remove(shuffleId: Int): Option[ShuffleMerges] = {
    removed.add(shuffleId)
    Option(shuffles.remove(shuffleId))
  }
}
