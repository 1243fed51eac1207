package org.apache.spark.shuffle.adaptive.sql

import org.apache.spark.unsafe.Platform
import org.apache.spark.shuffle.adaptive.combine.{Budget, CombinedRecords}

/**
 * Combined rows whose buffers are updated in place: each record is `[key length][buffer
 * length][key][buffer]` in pages ([[RecordPages]]), found by an open-addressing table whose slot
 * i holds the record's address plus one (0: empty) at 2i and its keys' hash at 2i + 1, side by
 * side, so a probe touches one cache line before the record's. The hash is the one the exchange
 * partitioned the row by, which is why a slot is chosen by its bits mixed
 * ([[BinaryRecords.slotOf]]): a partition's keys share the hash's low bits.
 */
private[sql] final class BinaryRecords(budget: Budget) extends CombinedRecords {
  val pages = new RecordPages(budget, 4 * 1024, BinaryRecords.MaxPage)
  // Made by the first fold, within what it reserved.
  var slots = new Array[Long](0)
  var size = 0

  def capacity: Int = slots.length / 2

  override def rows: Long = size
  override def bytes: Long = pages.bytes + 8L * slots.length

  def resize(newCapacity: Int): Unit = {
    val old = slots
    slots = new Array[Long](2 * newCapacity)
    val mask = newCapacity - 1
    var i = 0
    while (i < old.length) {
      if (old(i) != 0) {
        var slot = BinaryRecords.slotOf(old(i + 1).toInt, mask)
        while (slots(2 * slot) != 0) slot = (slot + 1) & mask
        slots(2 * slot) = old(i)
        slots(2 * slot + 1) = old(i + 1)
      }
      i += 2
    }
  }

  override def free(): Unit = {
    budget.release(8L * slots.length)
    pages.release()
    slots = new Array[Long](0)
  }
}

private[sql] object BinaryRecords {

  /** The largest page of combined records: what a partition's last page leaves unused. */
  val MaxPage = 64 * 1024

  /** Murmur3's finalizer: every bit of the hash moves every bit of the slot. */
  def slotOf(hash: Int, mask: Int): Int = {
    var h = hash
    h ^= h >>> 16
    h *= 0x85ebca6b
    h ^= h >>> 13
    h *= 0xc2b2ae35
    h ^= h >>> 16
    h & mask
  }

  /** Where a record lies: its page's index in the high half, its offset in the low half. */
  def address(page: Int, offset: Int): Long = (page.toLong << 32) | offset.toLong
  def pageOf(address: Long): Int = (address >>> 32).toInt
  def offsetOf(address: Long): Int = address.toInt
}

/**
 * Byte pages, each as large as the last twice over (from `first` up to `max`, or what one
 * record needs): records never move. Their bytes are reserved in `budget` before they are
 * allocated (a fold reserves its worst case), and given back by [[release]].
 */
private[sql] final class RecordPages(budget: Budget, first: Int, max: Int) {
  var pages = new Array[Array[Byte]](4)
  var count = 0
  private[this] var used = 0
  private[this] var size = first
  var bytes = 0L

  /** Room for `length` bytes: its address. */
  def allocate(length: Int): Long = {
    if (count == 0 || used + length > pages(count - 1).length) {
      val pageBytes = math.max(length, size)
      if (count == pages.length) pages = java.util.Arrays.copyOf(pages, count * 2)
      pages(count) = new Array[Byte](pageBytes)
      count += 1
      used = 0
      bytes += pageBytes
      size = math.min(max, size * 2)
    }
    val at = BinaryRecords.address(count - 1, used)
    used += length
    at
  }

  def nextPageBytes(length: Int): Int = math.max(length, size)

  /** The page of a record's address, and the offset of its first byte for [[Platform]]. */
  def page(address: Long): Array[Byte] = pages(BinaryRecords.pageOf(address))
  def offset(address: Long): Long = Platform.BYTE_ARRAY_OFFSET + BinaryRecords.offsetOf(address)

  def release(): Unit = {
    budget.release(bytes)
    bytes = 0
    pages = new Array[Array[Byte]](0)
    count = 0
  }
}
