package org.apache.spark.shuffle.adaptive.metrics

import scala.collection.mutable

/**
 * Per source executor of one stage's reads: the bytes it sent over its link (to the other
 * executors) and the bytes per second it delivered to all of them, the sum of the rates each
 * reading executor observed from it (they read concurrently). Remote bytes over that rate
 * estimate how long the source's link held the stage: the skew report's critical source.
 *
 * The rates need one entry per (reading executor, source) pair; beyond `maxPairs` of them
 * (≈ `sqrt(maxPairs)` executors reading from all) they are left out, the bytes never.
 */
private[metrics] final class SourceLinkTally(maxPairs: Int) {

  /** (reader, source) -> bytes read, Σ bytes × observed rate */
  private[this] val pairs = mutable.HashMap.empty[(String, String), Array[Double]]
  private[this] var pairsLeftOut = false
  private[this] val remoteBytes = mutable.TreeMap.empty[String, Long]

  /** One reduce task's counters, run on executor `reader`. */
  def add(reader: String, task: FetchCounters): Unit =
    task(FetchCounters.BytesBySource).foreach { case (source, bytes) =>
      if (source != reader) {
        remoteBytes(source) = remoteBytes.getOrElse(source, 0L) + bytes
        val key = (reader, source)
        if (pairs.contains(key) || pairs.size < maxPairs) {
          val pair = pairs.getOrElseUpdate(key, new Array[Double](2))
          pair(0) += bytes
          pair(1) += task(FetchCounters.RateBytesBySource).getOrElse(source, 0.0)
        } else {
          pairsLeftOut = true
        }
      }
    }

  def remoteBytesBySource: Map[String, Long] = remoteBytes.toMap

  /** Empty when pairs were left out: a partial sum would understate the rate. */
  def rateBySource: Map[String, Double] =
    if (pairsLeftOut) Map.empty
    else
      pairs.toSeq
        .collect { case ((_, source), pair) if pair(1) > 0 => source -> pair(1) / pair(0) }
        .groupMapReduce(_._1)(_._2)(_ + _)
}
