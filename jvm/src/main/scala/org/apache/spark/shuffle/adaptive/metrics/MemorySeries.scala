package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

/**
 * Samples of [[MemorySample]] gathered into buckets of `bucketMs`, each keeping every field's
 * largest sample and mean: the peaks and time-weighted means over any span of buckets (a reduce
 * stage's) follow from them. Samples come at a fixed rate, so a bucket's mean is its time-weighted
 * mean. Not thread-safe: one sampler thread adds and drains.
 */
private[metrics] final class MemorySeries(bucketMs: Long) {
  private[this] val done = mutable.ArrayBuffer.empty[MemorySeries.Bucket]
  private[this] var start = -1L
  private[this] var count = 0
  private[this] var max: Array[Long] = _
  private[this] var sum: Array[Long] = _

  def add(epochMs: Long, sample: MemorySample): Unit = {
    val bucket = epochMs - epochMs % bucketMs
    if (bucket != start) {
      close()
      start = bucket
      max = Array.fill(MemorySample.FieldNames.size)(Long.MinValue)
      sum = new Array[Long](MemorySample.FieldNames.size)
    }
    sample.fields.iterator.zipWithIndex.foreach { case (v, i) =>
      max(i) = math.max(max(i), v)
      sum(i) += v
    }
    count += 1
  }

  private def close(): Unit =
    if (count > 0) {
      done += MemorySeries.Bucket(start, max.toSeq, sum.map(_ / count).toSeq)
      count = 0
      start = -1L
    }

  /** The buckets closed since the last call, and with `all` the open one too. */
  def drain(all: Boolean): Seq[MemorySeries.Bucket] = {
    if (all) close()
    val out = done.toList
    done.clear()
    out
  }
}

private[metrics] object MemorySeries {

  /** One bucket from `startMs` (epoch): each field's largest sample and its mean. */
  final case class Bucket(startMs: Long, max: Seq[Long], mean: Seq[Long])
}
