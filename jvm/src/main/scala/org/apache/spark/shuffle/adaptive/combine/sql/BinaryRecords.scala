package org.apache.spark.shuffle.adaptive.combine.sql

import org.apache.spark.shuffle.adaptive.combine.{Budget, CombinedRecords}
import org.apache.spark.shuffle.adaptive.combine.map.KeySample

/**
 * Combined rows whose buffers are updated in place: each record is `[key length][buffer
 * length][key][buffer]` in pages ([[RecordPages]]), found by an open-addressing table whose slots
 * each hold, in one long, the record's address plus one (0: empty) and its keys' hash, so a probe
 * touches one cache line before the record's. The hash is the one the exchange partitioned the
 * row by, which is why a slot is chosen by its bits mixed ([[BinaryRecords.slotOf]]): a
 * partition's keys share the hash's low bits. What the pages and the table take is reserved in
 * `budget` before they grow.
 */
private[sql] final class BinaryRecords(budget: Budget) extends CombinedRecords {
  val pages = new RecordPages(budget, 4 * 1024, BinaryRecords.MaxPage)
  var slots = new Array[Long](0)
  var size = 0

  def capacity: Int = slots.length

  override def rows: Long = size
  override def bytes: Long = pages.bytes + 8L * slots.length

  /** Room for one more key: the table grown first if it must; false if there is none. */
  def roomForOneMore(): Boolean =
    2 * (size + 1) <= capacity || resize(math.max(BinaryRecords.InitialSlots, 2 * capacity))

  private def resize(newCapacity: Int): Boolean = budget.reserve(8L * newCapacity) && {
    val old = slots
    slots = new Array[Long](newCapacity)
    val mask = newCapacity - 1
    var i = 0
    while (i < old.length) {
      if (old(i) != 0) {
        var slot = BinaryRecords.slotOf(BinaryRecords.hashOf(old(i)), mask)
        while (slots(slot) != 0) slot = (slot + 1) & mask
        slots(slot) = old(i)
      }
      i += 1
    }
    budget.release(8L * old.length)
    true
  }

  override def free(): Unit = {
    budget.release(8L * slots.length)
    pages.release()
    slots = new Array[Long](0)
  }
}

private[sql] object BinaryRecords {

  /** The largest page of combined records: what a partition's last page leaves unused. */
  val MaxPage: Int = 1 << 14

  val InitialSlots = 16

  /** The slot of a hash, its bits mixed: a partition's keys share the hash's low bits. */
  def slotOf(hash: Int, mask: Int): Int = KeySample.mix(hash) & mask

  /**
   * Where a record lies, in an int: its page's index above [[OffsetBits]], its offset below (a
   * record larger than a page has one of its own, at offset 0).
   */
  def address(page: Int, offset: Int): Int = (page << OffsetBits) | offset
  def pageOf(address: Int): Int = address >>> OffsetBits
  def offsetOf(address: Int): Int = address & (MaxPage - 1)

  private val OffsetBits = 14

  /** Pages a partition's records may take: addresses stay below 2^31. */
  val MaxPages: Int = (1 << (31 - OffsetBits)) - 1

  /** A slot: a record's address plus one, and its keys' hash. */
  def slot(address: Int, hash: Int): Long = ((address + 1).toLong << 32) | (hash & 0xffffffffL)
  def addressOf(slot: Long): Int = (slot >>> 32).toInt - 1
  def hashOf(slot: Long): Int = slot.toInt
}
