package org.apache.spark.shuffle.adaptive.combine.sql

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.unsafe.Platform
import org.apache.spark.shuffle.adaptive.combine.{Budget, TaskRecords}

/**
 * The rows a map task of a combining exchange keeps, by partition, each with the hash of its
 * keys the exchange computed to partition it (so the fold probes with it and hashes nothing):
 * each partition's rows back to back, `[length][hash][row]`, in pages of its own (each as large
 * as its last twice over, up to [[KeptRows.MaxPage]], which bounds what a partition's last page
 * leaves unused), so a fold reads them in order. A record is `(hash, row)`.
 */
private[sql] final class KeptRows(budget: Budget, numPartitions: Int) extends TaskRecords {
  import KeptRows._

  private[this] val pages = new Array[Array[Array[Byte]]](numPartitions)
  private[this] val used = new Array[Array[Int]](numPartitions)
  private[this] val pageCounts = new Array[Int](numPartitions)
  private[this] val counts = new Array[Int](numPartitions)
  private[this] val rowBytes = new Array[Long](numPartitions)
  private[this] var reserved = 0L

  override def keep(partition: Int, record: Product2[Any, Any]): Boolean = {
    val row = record._2.asInstanceOf[UnsafeRow]
    val length = row.getSizeInBytes
    val n = pageCounts(partition)
    val fits = n > 0 && used(partition)(n - 1) + Header + length <= pages(partition)(n - 1).length
    (fits || newPage(partition, Header + length)) && {
      val last = pageCounts(partition) - 1
      val page = pages(partition)(last)
      val at = used(partition)(last)
      Platform.putInt(page, Platform.BYTE_ARRAY_OFFSET + at, length)
      Platform.putInt(page, Platform.BYTE_ARRAY_OFFSET + at + 4, record._1.asInstanceOf[Int])
      row.writeToMemory(page, Platform.BYTE_ARRAY_OFFSET + at + Header)
      used(partition)(last) = at + Header + length
      counts(partition) += 1
      rowBytes(partition) += length
      true
    }
  }

  private def newPage(partition: Int, length: Int): Boolean = {
    val n = pageCounts(partition)
    val size =
      math.max(
        length,
        if (n == 0) FirstPage else math.min(MaxPage, 2 * pages(partition)(n - 1).length))
    budget.reserve(size) && {
      reserved += size
      if (n == 0) {
        pages(partition) = new Array[Array[Byte]](4)
        used(partition) = new Array[Int](4)
      } else if (n == pages(partition).length) {
        pages(partition) = java.util.Arrays.copyOf(pages(partition), 2 * n)
        used(partition) = java.util.Arrays.copyOf(used(partition), 2 * n)
      }
      pages(partition)(n) = new Array[Byte](size)
      pageCounts(partition) = n + 1
      true
    }
  }

  override def rows(partition: Int): Int = counts(partition)
  override def bytes(partition: Int): Long = rowBytes(partition)
  override def partitions: Iterator[Int] = counts.indices.iterator.filter(counts(_) > 0)

  override def release(): Unit = {
    budget.release(reserved)
    reserved = 0
    java.util.Arrays.fill(pages.asInstanceOf[Array[AnyRef]], null)
    java.util.Arrays.fill(pageCounts, 0)
    java.util.Arrays.fill(counts, 0)
  }

  /**
   * Hands `f` the rows of `partition` from the `from`th on, in batches, in the order they came:
   * `f(page, n)` gets n rows of `page`, row i at `Platform.BYTE_ARRAY_OFFSET + offsets(i)`,
   * `lengths(i)` long, its keys' hash `hashes(i)`; `f` answers how many of them it took, and
   * fewer than n ends the walk. Answers the index of the first row not taken.
   */
  def foreachBatch(
      partition: Int,
      from: Int,
      offsets: Array[Int],
      lengths: Array[Int],
      hashes: Array[Int])(f: (Array[Byte], Int) => Int): Int = {
    var index = 0
    var i = 0
    while (i < pageCounts(partition)) {
      val page = pages(partition)(i)
      val end = used(partition)(i)
      var at = 0
      while (at < end) {
        var n = 0
        while (n < offsets.length && at < end) {
          val length = Platform.getInt(page, Platform.BYTE_ARRAY_OFFSET + at)
          if (index >= from) {
            hashes(n) = Platform.getInt(page, Platform.BYTE_ARRAY_OFFSET + at + 4)
            offsets(n) = at + Header
            lengths(n) = length
            n += 1
          }
          index += 1
          at += Header + length
        }
        if (n > 0) {
          val taken = f(page, n)
          if (taken < n) return index - n + taken
        }
      }
      i += 1
    }
    index
  }
}

private[sql] object KeptRows {

  /** Bytes of a kept row's header: its length and its keys' hash. */
  val Header = 8

  private val FirstPage = 512
  private val MaxPage = 16 * 1024
}
