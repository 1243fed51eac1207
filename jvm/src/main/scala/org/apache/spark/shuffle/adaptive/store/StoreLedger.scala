package org.apache.spark.shuffle.adaptive.store

import scala.collection.mutable

/**
 * The driver's account of every executor's store: its capacity and the bytes placed in it. It
 * runs the skew-aware meta-shuffle for each committed map output (DSA w/ SMS paper,
 * Algorithms 1 and 2): the map task's own store accepts the blocks in order while they fit
 * ([[Admission]]); the rest stay pending and are offered to the other stores in
 * [[OfferOrder]], each accepting in order while they fit; what is still pending stays in the
 * map output's file. Executors on which a map output overflows spill first: those are the
 * executors that hold the most bytes of the hot partitions. Not thread-safe.
 */
private[spark] final class StoreLedger(offerOrder: String) {
  import StoreLedger._

  private[this] val accounts = mutable.LinkedHashMap.empty[String, Account]
  private[this] var exchanges = 0L

  def register(executorId: String, capacity: Long): Unit =
    accounts.getOrElseUpdate(executorId, new Account(capacity))

  def remove(executorId: String): Unit = accounts -= executorId

  def contains(executorId: String): Boolean = accounts.contains(executorId)

  /**
   * Places the non-empty blocks `(reduceId, size)` of a map output of `self`, in their order:
   * for each, the executor whose store takes it, or None (its file), by the meta-shuffle above.
   * The bytes are counted as used at once, so concurrent map outputs never overcommit a store.
   */
  def place(self: String, blocks: Seq[(Int, Long)]): Seq[(Int, Long, Option[String])] = {
    val holders = mutable.HashMap.empty[Int, String]
    def offer(executorId: String, offered: Seq[(Int, Long)]): Unit = {
      val account = accounts(executorId)
      val taken = Admission.accepted(account.used, account.capacity, offered.map(_._2))
      exchanges += 1
      offered.take(taken).foreach { case (reduceId, size) =>
        account.add(size)
        holders(reduceId) = executorId
      }
    }
    def pending = blocks.filter(b => !holders.contains(b._1))
    if (pending.nonEmpty && accounts.contains(self)) offer(self, pending)
    if (pending.nonEmpty) {
      val free = accounts.iterator.map { case (id, a) => id -> (a.capacity - a.used) }.toMap
      OfferOrder
        .peers(offerOrder, self, free)
        .iterator
        .takeWhile(_ => pending.nonEmpty)
        .foreach(offer(_, pending))
    }
    blocks.map { case (reduceId, size) => (reduceId, size, holders.get(reduceId)) }
  }

  /** Bytes that left a store (their shuffle was removed, or they never arrived). */
  def release(executorId: String, bytes: Long): Unit =
    accounts.get(executorId).foreach(_.add(-bytes))

  /** Offers of meta-blocks made so far, own store and peers alike (meta-shuffle rounds). */
  def metaShuffleRounds: Long = exchanges

  def snapshot: Map[String, Usage] = accounts.iterator.map { case (id, a) =>
    id -> Usage(a.capacity, a.used, a.highWater)
  }.toMap
}

private[spark] object StoreLedger {

  final case class Usage(capacity: Long, used: Long, highWater: Long)

  private final class Account(val capacity: Long) {
    var used = 0L
    var highWater = 0L
    def add(bytes: Long): Unit = {
      used += bytes
      highWater = math.max(highWater, used)
    }
  }
}
