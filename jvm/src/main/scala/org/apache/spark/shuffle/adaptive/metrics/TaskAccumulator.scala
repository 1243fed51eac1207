package org.apache.spark.shuffle.adaptive.metrics

import java.io.{ObjectInputStream, ObjectOutputStream}

import org.apache.spark.util.AccumulatorV2

/**
 * An accumulator that travels in a shuffle's handle: each task deserializes its own zeroed copy,
 * fills it on its own thread, and Spark merges it back on the driver with the task's result.
 *
 * Spark's threads see a task's copy half made: `AccumulatorV2.readObject` registers it with its
 * task before this class's fields are read, and the executor's heartbeater asks every registered
 * accumulator `isZero` from then on (SPARK-20977 is the same race in Spark's own
 * `CollectionAccumulator`). So the state is read through one volatile field that is null until it
 * is whole, and a null reads as zero. A task updates its state without locks, so it leaves the
 * task only when the task ends: never with a heartbeat. The driver merges under a lock.
 *
 * @tparam S the mutable state: what `value` is
 */
private[spark] abstract class TaskAccumulator[IN, S <: Serializable](initial: S)
    extends AccumulatorV2[IN, S] {

  // Written by the constructor, by readObject once deserialized, and by reset.
  @transient @volatile private[this] var state: S = initial

  protected def zero(): S
  protected def isEmpty(state: S): Boolean
  protected def addTo(state: S, v: IN): Unit
  protected def mergeInto(state: S, other: S): Unit

  override def excludeFromHeartbeat: Boolean = true

  override def isZero: Boolean = {
    val s = state
    s == null || isEmpty(s)
  }

  override def reset(): Unit = state = zero()

  override def add(v: IN): Unit = synchronized(addTo(value, v))

  override def merge(other: AccumulatorV2[IN, S]): Unit = synchronized(
    mergeInto(value, other.value))

  /** The state; a zero one, not kept, while a copy is still being deserialized. */
  override def value: S = {
    val s = state
    if (s == null) zero() else s
  }

  private def writeObject(out: ObjectOutputStream): Unit = {
    out.defaultWriteObject()
    out.writeObject(value)
  }

  private def readObject(in: ObjectInputStream): Unit = {
    in.defaultReadObject()
    state = in.readObject().asInstanceOf[S]
  }
}
