package org.apache.spark.shuffle.adaptive.metrics

import java.io.{ObjectInputStream, ObjectOutputStream}

import org.apache.spark.scheduler.SparkListenerTaskEnd
import org.apache.spark.util.AccumulatorV2

/**
 * Carries [[FetchCounters]] from reduce tasks to the driver. One is registered per shuffle on the
 * driver and travels inside the shuffle handle, so each task deserializes its own zeroed copy,
 * updates it, and Spark merges it back with the task's result (and lists it per task and stage
 * in the UI, under the accumulator's name).
 *
 * Spark's threads see it half made: `AccumulatorV2.readObject` registers a deserialized copy with
 * its task before this class's fields are read, and the executor's heartbeater asks every
 * registered accumulator `isZero` from then on (SPARK-20977 is the same race in Spark's own
 * `CollectionAccumulator`). So the counters are read through one volatile field that is null
 * until they are whole, and a null reads as zero. A task updates its counters on its own thread
 * without locks, so they leave it only when the task ends: never with a heartbeat.
 */
private[spark] final class FetchMetricsAccumulator private (initial: FetchCounters)
    extends AccumulatorV2[FetchCounters, FetchCounters] {

  // Written by the constructor, by readObject once deserialized, and by reset.
  @transient @volatile private[this] var counters: FetchCounters = initial

  def this() = this(new FetchCounters)

  override def excludeFromHeartbeat: Boolean = true

  override def isZero: Boolean = {
    val c = counters
    c == null || c.isZero
  }

  override def copy(): FetchMetricsAccumulator = synchronized {
    new FetchMetricsAccumulator(value.copy())
  }

  override def reset(): Unit = counters = new FetchCounters

  override def add(v: FetchCounters): Unit = synchronized(value.merge(v))

  override def merge(other: AccumulatorV2[FetchCounters, FetchCounters]): Unit =
    synchronized(value.merge(other.value))

  /** The counters; zero ones, not kept, while a copy is still being deserialized. */
  override def value: FetchCounters = {
    val c = counters
    if (c == null) new FetchCounters else c
  }

  private def writeObject(out: ObjectOutputStream): Unit = {
    out.defaultWriteObject()
    out.writeObject(value)
  }

  private def readObject(in: ObjectInputStream): Unit = {
    in.defaultReadObject()
    counters = in.readObject().asInstanceOf[FetchCounters]
  }
}

private[spark] object FetchMetricsAccumulator {

  /** Accumulator names start with this, followed by the shuffle id. */
  val NamePrefix = "pyspark-shuffle fetch, shuffle "

  /** The counters a finished task reported, with their shuffle's id (its accumulators' names). */
  def ofTask(taskEnd: SparkListenerTaskEnd): Seq[(Int, FetchCounters)] =
    Option(taskEnd.taskInfo).toSeq.flatMap(_.accumulables).collect {
      case acc
          if acc.name.exists(_.startsWith(NamePrefix)) && acc.update.exists(
            _.isInstanceOf[FetchCounters]) =>
        (acc.name.get.stripPrefix(NamePrefix).toInt, acc.update.get.asInstanceOf[FetchCounters])
    }
}
