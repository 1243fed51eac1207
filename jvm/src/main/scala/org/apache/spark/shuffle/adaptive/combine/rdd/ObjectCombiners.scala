package org.apache.spark.shuffle.adaptive.combine.rdd

import org.apache.spark.Aggregator
import org.apache.spark.serializer.SerializationStream
import org.apache.spark.util.SizeEstimator
import org.apache.spark.shuffle.adaptive.combine.{Budget, CombineEngine, CombinedObjects, FoldCount, TaskRecords}

/**
 * Combining an RDD aggregator's records as objects ([[AggregatorCombine]]): a map task
 * combines its records per partition with `createCombiner` and `mergeValue`, as the sort
 * shuffle's map-side combine would have, and its combiners are merged into the executor's with
 * `mergeCombiners`. Memory is estimated by sampling (as Spark's own map-side combine does), a
 * record's estimate counted for every record kept, since combiners may grow as they merge.
 */
private[combine] final class ObjectCombiners(aggregator: Aggregator[Any, Any, Any])
    extends CombineEngine[TaskCombiners, CombinedObjects[Any, Any]] {
  import ObjectCombiners._

  override def newTaskRecords(budget: Budget, numPartitions: Int): TaskCombiners =
    new TaskCombiners(budget, numPartitions, aggregator)

  override def newCombined(budget: Budget): CombinedObjects[Any, Any] =
    new CombinedObjects[Any, Any](budget)

  // A combiner is taken to be as large as the records it was made of, on average.
  override def fold(
      records: TaskCombiners,
      partition: Int,
      from: Int,
      combiners: CombinedObjects[Any, Any]): FoldCount = {
    val perRecord = records.bytes(partition) / math.max(1, records.rows(partition))
    var merged = 0L
    val next = records.foldFrom(partition, from) { (key, combiner) =>
      val held = combiners.map.get(key)
      if (held != null || combiners.map.containsKey(key)) {
        combiners.map.put(key, aggregator.mergeCombiners(held, combiner))
        merged += 1
        true
      } else
        combiners.reserve(perRecord) && {
          combiners.map.put(key, combiner)
          true
        }
    }
    val rows = (next - from).toLong
    FoldCount(rows, merged, (rows - merged) * perRecord, next)
  }

  override def write(
      partition: Int,
      records: CombinedObjects[Any, Any],
      out: SerializationStream): Unit =
    records.map.forEach { (key, combiner) =>
      out.writeKey(key)
      out.writeValue(combiner)
    }

  override def writeKept(
      task: TaskCombiners,
      partition: Int,
      from: Int,
      out: SerializationStream): Unit =
    task.foldFrom(partition, from) { (key, combiner) =>
      out.writeKey(key)
      out.writeValue(combiner)
      true
    }
}

/** A map task's combiners by partition, as objects; what they take is estimated, reserved. */
private[combine] final class TaskCombiners(
    budget: Budget,
    numPartitions: Int,
    aggregator: Aggregator[Any, Any, Any])
    extends TaskRecords {
  import ObjectCombiners._

  private[this] val byPartition = new Array[java.util.HashMap[Any, Any]](numPartitions)
  private[this] val bytesByPartition = new Array[Long](numPartitions)
  private[this] var reserved = 0L
  private[this] var used = 0L
  private[this] var count = 0L
  private[this] var bytesPerRecord = 0L

  override def keep(partition: Int, record: Product2[Any, Any]): Boolean = {
    if (count % SampleEvery == 0) {
      bytesPerRecord = SizeEstimator.estimate(record.asInstanceOf[AnyRef])
    }
    val fits = used + bytesPerRecord <= reserved || {
      // As much again as is reserved, up to a step: few reservations, and none much larger
      // than the records need.
      val step = math.max(bytesPerRecord, math.min(ReserveStep, reserved))
      budget.reserve(step) && {
        reserved += step
        true
      }
    }
    fits && {
      count += 1
      used += bytesPerRecord
      bytesByPartition(partition) += bytesPerRecord
      if (byPartition(partition) == null) byPartition(partition) = new java.util.HashMap
      val combiners = byPartition(partition)
      val held = combiners.get(record._1)
      combiners.put(
        record._1,
        if (held == null && !combiners.containsKey(record._1))
          aggregator.createCombiner(record._2)
        else aggregator.mergeValue(held, record._2))
      true
    }
  }

  /**
   * Hands `f` each key and combiner of `partition` from the `from`th on (in the map's order,
   * the same each time), until it answers false; answers the index of the first not taken.
   */
  def foldFrom(partition: Int, from: Int)(f: (Any, Any) => Boolean): Int = {
    val entries = byPartition(partition).entrySet.iterator
    var i = 0
    while (i < from) {
      entries.next()
      i += 1
    }
    var taking = true
    while (taking && entries.hasNext) {
      val entry = entries.next()
      taking = f(entry.getKey, entry.getValue)
      if (taking) i += 1
    }
    i
  }

  override def rows(partition: Int): Int =
    Option(byPartition(partition)).fold(0)(_.size)
  override def bytes(partition: Int): Long = bytesByPartition(partition)
  override def partitions: Iterator[Int] = byPartition.indices.iterator.filter(rows(_) > 0)

  override def release(): Unit = {
    budget.release(reserved)
    reserved = 0
    java.util.Arrays.fill(byPartition.asInstanceOf[Array[AnyRef]], null)
  }
}

private object ObjectCombiners {

  /** Records between two estimates of their size. */
  val SampleEvery = 64

  /** The most bytes a task's records reserve at a time. */
  val ReserveStep = 64 * 1024
}
