package org.apache.spark.shuffle.adaptive.combine

import scala.collection.mutable

import org.apache.spark.Aggregator
import org.apache.spark.serializer.SerializationStream
import org.apache.spark.util.SizeEstimator

/**
 * An RDD shuffle with map-side combine (`reduceByKey`, `aggregateByKey`, `combineByKey`): its
 * map tasks write `(key, value)` records that the sort shuffle combines per task with
 * `createCombiner` and `mergeValue`, and its reduce tasks merge the combiners with
 * `mergeCombiners`. Folding every task's values into one combiner per key and executor, with
 * `createCombiner` and `mergeValue` as if one task had written them all, gives records of the
 * same kind. Records are objects here, their memory estimated by sampling (as Spark's own
 * map-side combine does).
 */
private[spark] final class AggregatorCombine(aggregator: Aggregator[Any, Any, Any])
    extends CombineSpec {

  override def kind: String = "rdd"

  // The aggregator's functions are compiled already.
  override def newEngine(compiled: Boolean): CombineEngine =
    new AggregatorCombine.Engine(aggregator)
}

private[spark] object AggregatorCombine {

  /** Records between two estimates of their size. */
  private val SampleEvery = 64

  /** The most bytes a task's records reserve at a time. */
  private val ReserveStep = 64 * 1024

  private[this] val serials = new java.util.concurrent.atomic.AtomicLong

  private final class Records(budget: Budget) extends TaskRecords {

    /** Tells this task's records apart from other tasks' in the combiners they fold into. */
    val serial: Long = serials.incrementAndGet()
    val byPartition = mutable.HashMap.empty[Int, mutable.ArrayBuffer[Product2[Any, Any]]]
    private[this] val bytesByPartition = mutable.HashMap.empty[Int, Long]
    private[this] var reserved = 0L
    private[this] var used = 0L
    private[this] var full = false
    private[this] var count = 0L
    private[this] var bytesPerRecord = 0L

    override def add(partition: Int, record: Product2[Any, Any]): Boolean = !full && {
      // The sorter writing the map output may merge values in place (an aggregator may modify
      // its first argument, and reduceByKey's combiner is the value itself), before the fold
      // reads them: a task is folded only if no value it wrote can change.
      if (!Unchangeable(record._2)) full = true
      else {
        if (count % SampleEvery == 0) {
          bytesPerRecord = SizeEstimator.estimate(record.asInstanceOf[AnyRef])
        }
        count += 1
        if (used + bytesPerRecord > reserved) {
          // As much again as is reserved, up to a step: few reservations, and none much larger
          // than the records need.
          val step = math.max(bytesPerRecord, math.min(ReserveStep, reserved))
          full = !budget.reserve(step)
          if (!full) reserved += step
        }
      }
      if (!full) {
        used += bytesPerRecord
        // Held as written, as Spark's own map-side combine holds an RDD's records.
        byPartition.getOrElseUpdate(partition, mutable.ArrayBuffer.empty) += record
        bytesByPartition(partition) = bytesByPartition.getOrElse(partition, 0L) + bytesPerRecord
      }
      !full
    }

    override def rows(partition: Int): Int = byPartition.get(partition).fold(0)(_.size)
    override def bytes(partition: Int): Long = bytesByPartition.getOrElse(partition, 0L)
    override def partitions: Iterator[Int] = byPartition.keys.toSeq.sorted.iterator

    override def release(): Unit = {
      budget.release(reserved)
      reserved = 0
      byPartition.clear()
    }
  }

  /** Whether nothing reachable from a value can change: immutable boxes, text, numbers. */
  private[combine] object Unchangeable {
    private val Leaves: Set[Class[_]] = Set(
      classOf[java.lang.Integer],
      classOf[java.lang.Long],
      classOf[java.lang.Double],
      classOf[java.lang.Float],
      classOf[java.lang.Short],
      classOf[java.lang.Byte],
      classOf[java.lang.Boolean],
      classOf[java.lang.Character],
      classOf[String],
      classOf[java.math.BigInteger],
      classOf[java.math.BigDecimal],
      classOf[scala.math.BigInt],
      classOf[scala.math.BigDecimal],
      classOf[scala.runtime.BoxedUnit],
      None.getClass)

    /** Deep enough for a tuple of tuples, as `aggregateByKey` values tend to be. */
    private val MaxDepth = 4

    def apply(value: Any): Boolean = unchangeable(value, 0)

    private def unchangeable(value: Any, depth: Int): Boolean = value match {
      case null => true
      case v if Leaves(v.getClass) => true
      // Tuples and Some hold their fields in vals, so they change only if a field can.
      case p: Product
          if depth < MaxDepth && (p.isInstanceOf[Some[_]] ||
            p.getClass.getName.startsWith("scala.Tuple")) =>
        p.productIterator.forall(unchangeable(_, depth + 1))
      case _ => false
    }
  }

  /** A key's combiner, and the task whose values merged into it last. */
  private final class Held(var combiner: Any, var task: Long)

  private final class Engine(aggregator: Aggregator[Any, Any, Any]) extends CombineEngine {

    override def newTaskRecords(budget: Budget, numPartitions: Int): TaskRecords =
      new Records(budget)

    override def newCombined(budget: Budget): CombinedRecords =
      new CombinedObjects[Any, Held](budget)

    // A combiner is taken to be as large as the record it was made of: a new key takes about
    // its record's bytes, and the estimate is what the task's records reserved.
    override def worstCase(task: TaskRecords, partition: Int, into: CombinedRecords): Long =
      task.bytes(partition)

    // The map output holds a record per key of its values (the sort shuffle combines them with
    // the same aggregator), so each key its values make is one of its records, and each key
    // they meet that another task's made is one of its records that met a key held.
    override def fold(task: TaskRecords, partition: Int, into: CombinedRecords): FoldCount = {
      val records = task.asInstanceOf[Records]
      val combiners = into.asInstanceOf[CombinedObjects[Any, Held]]
      val perRecord = task.bytes(partition) / math.max(1, task.rows(partition))
      val self = records.serial
      var rows, met = 0L
      records.byPartition
        .get(partition)
        .foreach(_.foreach { record =>
          val held = combiners.map.get(record._1)
          if (held == null) {
            combiners.map.put(record._1, new Held(aggregator.createCombiner(record._2), self))
            combiners.held += perRecord
            rows += 1
          } else {
            held.combiner = aggregator.mergeValue(held.combiner, record._2)
            if (held.task != self) {
              held.task = self
              rows += 1
              met += 1
            }
          }
        })
      FoldCount(rows, met)
    }

    override def write(partition: Int, records: CombinedRecords, out: SerializationStream): Unit =
      records.asInstanceOf[CombinedObjects[Any, Held]].map.forEach { (key, held) =>
        out.writeKey(key)
        out.writeValue(held.combiner)
      }
  }
}
