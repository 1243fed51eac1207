package org.apache.spark.shuffle.adaptive.combine

import scala.collection.mutable

import org.apache.spark.Aggregator
import org.apache.spark.serializer.SerializationStream
import org.apache.spark.util.SizeEstimator

/**
 * An RDD shuffle with map-side combine (`reduceByKey`, `aggregateByKey`, `combineByKey`): its
 * map tasks write `(key, value)` records that the sort shuffle combines per task with
 * `createCombiner` and `mergeValue`, and its reduce tasks merge the combiners with
 * `mergeCombiners`. Folding a task's combiners into the executor's with `mergeCombiners`
 * gives records of the same kind, one per key and executor. Records are objects here, their
 * memory estimated by sampling (as Spark's own map-side combine does).
 */
private[spark] final class AggregatorCombine(aggregator: Aggregator[Any, Any, Any])
    extends CombineSpec {

  override def kind: String = "rdd"

  override def newEngine(): CombineEngine = new AggregatorCombine.Engine(aggregator)
}

private[spark] object AggregatorCombine {

  /** Records between two estimates of their size. */
  private val SampleEvery = 64

  private final class Records(budget: Budget) extends TaskRecords {
    val byPartition = mutable.HashMap.empty[Int, mutable.ArrayBuffer[(Any, Any)]]
    private[this] val bytesByPartition = mutable.HashMap.empty[Int, Long]
    private[this] var reserved = 0L
    private[this] var full = false
    private[this] var count = 0L
    private[this] var bytesPerRecord = 0L

    override def add(partition: Int, record: Product2[Any, Any]): Boolean = !full && {
      if (count % SampleEvery == 0) {
        bytesPerRecord = SizeEstimator.estimate((record._1, record._2).asInstanceOf[AnyRef])
      }
      count += 1
      full = !budget.reserve(bytesPerRecord)
      if (!full) {
        reserved += bytesPerRecord
        byPartition
          .getOrElseUpdate(partition, mutable.ArrayBuffer.empty) += ((record._1, record._2))
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

  private final class Combiners(budget: Budget) extends CombinedRecords {
    val map = new java.util.HashMap[Any, Any]
    var held = 0L
    override def rows: Long = map.size.toLong
    override def bytes: Long = held
    override def free(): Unit = {
      budget.release(held)
      held = 0
      map.clear()
    }
  }

  private final class Engine(aggregator: Aggregator[Any, Any, Any]) extends CombineEngine {

    override def newTaskRecords(budget: Budget, numPartitions: Int): TaskRecords =
      new Records(budget)

    override def newCombined(budget: Budget): CombinedRecords = new Combiners(budget)

    // A combiner is taken to be as large as the record it was made of: a new key takes about
    // its record's bytes, and the estimate is what the task's records reserved.
    override def worstCase(task: TaskRecords, partition: Int, into: CombinedRecords): Long =
      task.bytes(partition)

    // The map output holds a record per key of its values (the sort shuffle combines them with
    // the same aggregator): they are combined so first, then each of those records merges into
    // the executor's combiner of its key, if it holds one.
    override def fold(task: TaskRecords, partition: Int, into: CombinedRecords): FoldCount = {
      val records = task.asInstanceOf[Records]
      val combiners = into.asInstanceOf[Combiners]
      val perRecord = task.bytes(partition) / math.max(1, task.rows(partition))
      val own = new java.util.HashMap[Any, Any]
      records.byPartition
        .get(partition)
        .foreach(_.foreach { case (key, value) =>
          val combiner = own.get(key)
          own.put(
            key,
            if (combiner == null && !own.containsKey(key)) aggregator.createCombiner(value)
            else aggregator.mergeValue(combiner, value))
        })
      var met = 0L
      own.forEach { (key, combiner) =>
        val held = combiners.map.get(key)
        if (held == null && !combiners.map.containsKey(key)) {
          combiners.map.put(key, combiner)
          combiners.held += perRecord
        } else {
          combiners.map.put(key, aggregator.mergeCombiners(held, combiner))
          met += 1
        }
      }
      FoldCount(own.size, met)
    }

    override def write(partition: Int, records: CombinedRecords, out: SerializationStream): Unit =
      records.asInstanceOf[Combiners].map.forEach { (key, combiner) =>
        out.writeKey(key)
        out.writeValue(combiner)
      }
  }
}
