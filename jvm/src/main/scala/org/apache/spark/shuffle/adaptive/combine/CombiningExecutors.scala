package org.apache.spark.shuffle.adaptive.combine

import scala.collection.mutable

import org.apache.spark.shuffle.adaptive.metrics.TaskAccumulator

/**
 * The executors whose map tasks' folds of one shuffle met keys held there: those a reduce task
 * asks for combined records. Map tasks add their executor; the handle carries the set the driver
 * has merged by the time the reduce stage's tasks are serialized, which follows the map tasks'
 * ends: no driver state per block, no round trip.
 */
private[spark] final class CombiningExecutors private (initial: mutable.TreeSet[String])
    extends TaskAccumulator[String, mutable.TreeSet[String]](initial) {

  def this() = this(mutable.TreeSet.empty[String])

  override protected def zero(): mutable.TreeSet[String] = mutable.TreeSet.empty[String]
  override protected def isEmpty(state: mutable.TreeSet[String]): Boolean = state.isEmpty
  override protected def addTo(state: mutable.TreeSet[String], executor: String): Unit =
    state += executor
  override protected def mergeInto(
      state: mutable.TreeSet[String],
      other: mutable.TreeSet[String]): Unit = state ++= other

  override def copy(): CombiningExecutors = synchronized(new CombiningExecutors(value.clone()))

  /** The set, as it is now. */
  def executors: Set[String] = synchronized(value.toSet)
}

private[spark] object CombiningExecutors {

  /** Accumulator names start with this, followed by the shuffle id. */
  val NamePrefix = "pyspark-shuffle combining executors, shuffle "
}
