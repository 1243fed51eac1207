package org.apache.spark.shuffle.adaptive.combine.sql

import org.apache.spark.unsafe.Platform
import org.apache.spark.shuffle.adaptive.combine.Budget

/**
 * Byte pages, each as large as the last twice over (from `first` up to `max`, or what one
 * record needs): records never move. A page's bytes are reserved in `budget` before it is
 * allocated, and given back by [[release]].
 */
private[sql] final class RecordPages(budget: Budget, first: Int, max: Int) {
  var pages = new Array[Array[Byte]](4)
  var count = 0
  private[this] var used = 0
  private[this] var size = first
  var bytes = 0L

  /** Room for `length` bytes: its address, or -1 if a page it needs finds no room. */
  def allocate(length: Int): Int = {
    if (count == 0 || used + length > pages(count - 1).length) {
      val pageBytes = math.max(length, size)
      if (count == BinaryRecords.MaxPages || !budget.reserve(pageBytes)) return -1
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

  /** The page of a record's address, and the offset of its first byte for [[Platform]]. */
  def page(address: Int): Array[Byte] = pages(BinaryRecords.pageOf(address))
  def offset(address: Int): Long = Platform.BYTE_ARRAY_OFFSET + BinaryRecords.offsetOf(address)

  def release(): Unit = {
    budget.release(bytes)
    bytes = 0
    pages = new Array[Array[Byte]](0)
    count = 0
  }
}
