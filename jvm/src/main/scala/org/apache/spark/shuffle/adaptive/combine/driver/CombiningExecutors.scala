package org.apache.spark.shuffle.adaptive.combine.driver

import scala.collection.mutable

import org.apache.spark.shuffle.adaptive.metrics.TaskAccumulator

/**
 * The executors whose map tasks folded records of one shuffle, each with the bytes of the
 * records its folds added (what its segments will hold, before they are serialized): those a
 * reduce task asks for combined records, and what it expects of each. Map tasks add their
 * executor; the handle carries the map the driver has merged by the time the reduce stage's
 * tasks are serialized, which follows the map tasks' ends (Spark merges a task's accumulators
 * before it registers its MapStatus): no driver state per block, no round trip.
 */
private[spark] final class CombiningExecutors private (initial: mutable.TreeMap[String, Long])
    extends TaskAccumulator[(String, Long), mutable.TreeMap[String, Long]](initial) {

  def this() = this(mutable.TreeMap.empty[String, Long])

  override protected def zero(): mutable.TreeMap[String, Long] = mutable.TreeMap.empty
  override protected def isEmpty(state: mutable.TreeMap[String, Long]): Boolean = state.isEmpty
  override protected def addTo(state: mutable.TreeMap[String, Long], folded: (String, Long)): Unit =
    state(folded._1) = state.getOrElse(folded._1, 0L) + folded._2
  override protected def mergeInto(
      state: mutable.TreeMap[String, Long],
      other: mutable.TreeMap[String, Long]): Unit = other.foreach(addTo(state, _))

  override def copy(): CombiningExecutors = synchronized(new CombiningExecutors(value.clone()))

  /** Executor id -> bytes its folds added, as it is now. */
  def executors: Map[String, Long] = synchronized(value.toMap)
}

private[spark] object CombiningExecutors {

  /** Accumulator names start with this, followed by the shuffle id. */
  val NamePrefix = "pyspark-shuffle combining executors, shuffle "
}
