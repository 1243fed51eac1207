package org.apache.spark.shuffle.adaptive.combine.rdd

import org.apache.spark.Aggregator
import org.apache.spark.serializer.SerializationStream
import org.apache.spark.shuffle.adaptive.combine.{Budget, CombineEngine, CombinedRecords, FoldCount, TaskRecords}

/**
 * Combining an RDD aggregator's records whose keys are integers and combiners numbers
 * ([[AggregatorCombine]]), kept as primitives: a map task combines its records in a table of
 * its own ([[NumberTable]]), and its combiners are merged into the executor's tables, one per
 * partition, which hold no object the garbage collector has to scan (large primitive arrays
 * no longer referenced are reclaimed at once). The aggregator's functions still take and return
 * boxes; those die young.
 */
private[combine] final class NumberCombiners(
    aggregator: Aggregator[Any, Any, Any],
    keys: NumberKind,
    combiners: NumberKind)
    extends CombineEngine[TaskNumbers, ExecutorNumbers] {

  override def newTaskRecords(budget: Budget, numPartitions: Int): TaskNumbers =
    new TaskNumbers(budget, numPartitions, aggregator, keys, combiners)

  override def newCombined(budget: Budget): ExecutorNumbers = new ExecutorNumbers(budget)

  override def fold(
      task: TaskNumbers,
      partition: Int,
      from: Int,
      combined: ExecutorNumbers): FoldCount = {
    val table = combined.table
    var merged = 0L
    val next = task.foldFrom(partition, from) { (key, combiner) =>
      val slot = if (table.capacity == 0) -1 else table.find(key)
      if (slot >= 0 && table.holds(slot)) {
        val sum =
          aggregator.mergeCombiners(combiners.box(table.values(slot)), combiners.box(combiner))
        table.values(slot) = combiners.bits(sum)
        merged += 1
        true
      } else
        combined.roomForOneMore() && {
          table.insert(table.find(key), key, combiner, partition)
          true
        }
    }
    val rows = (next - from).toLong
    FoldCount(rows, merged, (rows - merged) * NumberTable.EntryBytes, next)
  }

  override def write(partition: Int, records: ExecutorNumbers, out: SerializationStream): Unit = {
    val table = records.table
    var s = 0
    while (s < table.capacity) {
      if (table.holds(s)) {
        out.writeKey(keys.box(table.keys(s)))
        out.writeValue(combiners.box(table.values(s)))
      }
      s += 1
    }
  }

  override def writeKept(
      task: TaskNumbers,
      partition: Int,
      from: Int,
      out: SerializationStream): Unit =
    task.foldFrom(partition, from) { (key, combiner) =>
      out.writeKey(keys.box(key))
      out.writeValue(combiners.box(combiner))
      true
    }
}

/** A map task's combiners, each with its key's partition; the table's bytes are reserved. */
private[combine] final class TaskNumbers(
    budget: Budget,
    numPartitions: Int,
    aggregator: Aggregator[Any, Any, Any],
    keys: NumberKind,
    combiners: NumberKind)
    extends TaskRecords {

  private[this] val table = new NumberTable
  private[this] val counts = new Array[Int](numPartitions)
  private[this] var reserved = 0L
  private[this] var released = false

  /** Slots of the table by partition, once the first fold asks: `slots(starts(p) until ...)`. */
  private[this] var starts: Array[Int] = _
  private[this] var slots: Array[Int] = _

  override def keep(partition: Int, record: Product2[Any, Any]): Boolean =
    keys.boxes(record._1) && (table.capacity > 0 || roomForOneMore()) && {
      val key = keys.bits(record._1)
      val slot = table.find(key)
      if (table.holds(slot)) {
        // Boxes never change, so the combiner held stays as it was if this one is refused.
        val merged = aggregator.mergeValue(combiners.box(table.values(slot)), record._2)
        combiners.boxes(merged) && {
          table.values(slot) = combiners.bits(merged)
          true
        }
      } else {
        val created = aggregator.createCombiner(record._2)
        combiners.boxes(created) && roomForOneMore() && {
          table.insert(table.find(key), key, combiners.bits(created), partition)
          counts(partition) += 1
          true
        }
      }
    }

  private def roomForOneMore(): Boolean = !table.full || {
    val before = NumberTable.bytesOf(table.capacity)
    val after = NumberTable.bytesOf(table.grownCapacity)
    budget.reserve(after) && {
      table.grow()
      budget.release(before)
      reserved += after - before
      true
    }
  }

  override def rows(partition: Int): Int = counts(partition)

  override def bytes(partition: Int): Long = NumberTable.EntryBytes.toLong * counts(partition)

  override def partitions: Iterator[Int] = counts.indices.iterator.filter(counts(_) > 0)

  /**
   * Hands `f` each combiner of `partition` from the `from`th on, until it answers false;
   * answers the index of the first it did not take.
   */
  def foldFrom(partition: Int, from: Int)(f: (Long, Long) => Boolean): Int = {
    if (starts == null) index()
    var i = starts(partition) + from
    while (i < starts(partition + 1) && f(table.keys(slots(i)), table.values(slots(i)))) i += 1
    i - starts(partition)
  }

  // Counting sort of the table's slots by partition.
  private def index(): Unit = {
    starts = new Array[Int](numPartitions + 1)
    var p = 0
    while (p < numPartitions) {
      starts(p + 1) = starts(p) + counts(p)
      p += 1
    }
    val next = java.util.Arrays.copyOf(starts, numPartitions)
    slots = new Array[Int](table.size)
    var s = 0
    while (s < table.capacity) {
      if (table.holds(s)) {
        slots(next(table.partitions(s))) = s
        next(table.partitions(s)) += 1
      }
      s += 1
    }
  }

  override def release(): Unit = if (!released) {
    released = true
    budget.release(reserved)
    table.release()
  }
}

/** A partition's combiners on the executor; `bytes` is what its table takes, reserved. */
private[combine] final class ExecutorNumbers(budget: Budget) extends CombinedRecords {
  val table = new NumberTable

  /** Room for one more key: the table grown first if it must; false if there is none. */
  def roomForOneMore(): Boolean = !table.full || {
    val before = NumberTable.bytesOf(table.capacity)
    budget.reserve(NumberTable.bytesOf(table.grownCapacity)) && {
      table.grow()
      budget.release(before)
      true
    }
  }

  override def rows: Long = table.size
  override def bytes: Long = NumberTable.bytesOf(table.capacity)
  override def free(): Unit = {
    budget.release(bytes)
    table.release()
  }
}

/**
 * An open-addressing table of long keys and long values, each with a partition (-1: the slot
 * is empty), grown to keep at most half its slots full; it has no slots until it first grows.
 */
private[combine] final class NumberTable {
  var capacity: Int = 0
  var keys = new Array[Long](0)
  var values = new Array[Long](0)
  var partitions = new Array[Int](0)
  var size = 0

  def full: Boolean = 2 * (size + 1) > capacity

  def holds(slot: Int): Boolean = partitions(slot) >= 0

  /** `key`'s slot, or the empty one it would take. */
  def find(key: Long): Int = {
    val mask = capacity - 1
    var slot = NumberTable.slotOf(key, mask)
    while (partitions(slot) >= 0 && keys(slot) != key) slot = (slot + 1) & mask
    slot
  }

  def insert(slot: Int, key: Long, value: Long, partition: Int): Unit = {
    keys(slot) = key
    values(slot) = value
    partitions(slot) = partition
    size += 1
  }

  def grownCapacity: Int = math.max(NumberTable.InitialCapacity, 2 * capacity)

  def grow(): Unit = {
    val (oldKeys, oldValues, oldPartitions, oldCapacity) = (keys, values, partitions, capacity)
    capacity = grownCapacity
    keys = new Array[Long](capacity)
    values = new Array[Long](capacity)
    partitions = Array.fill(capacity)(-1)
    size = 0
    var s = 0
    while (s < oldCapacity) {
      if (oldPartitions(s) >= 0)
        insert(find(oldKeys(s)), oldKeys(s), oldValues(s), oldPartitions(s))
      s += 1
    }
  }

  def release(): Unit = {
    capacity = 0
    keys = new Array[Long](0)
    values = new Array[Long](0)
    partitions = new Array[Int](0)
    size = 0
  }
}

private[combine] object NumberTable {
  val InitialCapacity = 1024

  /** Bytes of a slot: key, value and partition. */
  val EntryBytes = 20

  def bytesOf(capacity: Long): Long = EntryBytes * capacity

  /** Murmur3's 64-bit finalizer: integer keys are often sequential. */
  def slotOf(key: Long, mask: Int): Int = {
    var h = key
    h ^= h >>> 33
    h *= 0xff51afd7ed558ccdL
    h ^= h >>> 33
    h *= 0xc4ceb9fe1a85ec53L
    h ^= h >>> 33
    h.toInt & mask
  }
}
