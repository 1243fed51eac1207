package org.apache.spark.shuffle.adaptive.combine.sql

import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.serializer.SerializationStream
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BoundReference, Expression, InterpretedUnsafeProjection, JoinedRow, MutableProjection, SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, DeclarativeAggregate, ImperativeAggregate, NoOp, TypedImperativeAggregate}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.DataType
import org.apache.spark.unsafe.Platform
import org.apache.spark.shuffle.adaptive.combine.{Budget, CombineEngine, CombinedObjects, CombinedRecords, FoldCount, TaskRecords}

/**
 * What one thread folds a partial aggregate's rows with ([[SqlCombine]]): rows of one key merge
 * as the aggregate's next step merges them, with Spark's code (the merge expressions of
 * declarative functions, `merge` of imperative ones, the object merge of typed imperative ones,
 * as `AggregationIterator` does for a PartialMerge aggregate), generated or interpreted.
 *
 * A map task keeps its rows with their keys' hash ([[KeptRows]]); a fold probes the partition's
 * records with that hash and compares keys where they lie ([[KeysInPlace]]), so a row is hashed
 * once, by the exchange, and its key projected only when new.
 *
 * @param binary the records are [[BinaryRecords]] (every buffer field updated in place), else
 *               rows of objects
 */
private[sql] final class SqlFoldEngine(
    aggregates: Seq[AggregateExpression],
    input: Seq[Attribute],
    numKeys: Int,
    binary: Boolean)
    extends CombineEngine {
  import SqlFoldEngine._

  // Projections look for common subexpressions when made: on an executor whose code for that
  // is cold, that took half a second of each executor's map stage where combining paid (the
  // profile showed it), and merge expressions (sums, counts, extrema) share none.
  private[this] lazy val withoutSubexpressions = {
    // The session's SQL settings, as a task has them (a task's own conf cannot be copied).
    val conf = Option(TaskContext.get()).fold(SQLConf.get.clone()) { task =>
      val copy = new SQLConf
      val properties = task.getLocalProperties
      properties.stringPropertyNames().asScala.filter(_.startsWith("spark.sql.")).foreach { key =>
        copy.setConfString(key, properties.getProperty(key))
      }
      copy
    }
    conf.setConf(SQLConf.SUBEXPRESSION_ELIMINATION_ENABLED, false)
    conf
  }

  // Generated code, or interpreted where Spark's codegen settings say so or it fails.
  private def mutableProjection(exprs: Seq[Expression], schema: Seq[Attribute]) =
    SQLConf.withExistingConf(withoutSubexpressions)(MutableProjection.create(exprs, schema))

  private def unsafeProjection(exprs: Seq[Expression], schema: Seq[Attribute]) =
    SQLConf.withExistingConf(withoutSubexpressions)(UnsafeProjection.create(exprs, schema))

  private[this] val keys = input.take(numKeys)
  private[this] val keysInPlace = new KeysInPlace(keys.map(_.dataType))

  // Imperative functions read and write the buffer row at their offset, the input row past
  // the keys (as a PartialMerge aggregate binds them).
  private[this] val functions = {
    var offset = 0
    aggregates.map(_.aggregateFunction).map { f =>
      val bound = f match {
        case i: ImperativeAggregate =>
          i.withNewMutableAggBufferOffset(offset).withNewInputAggBufferOffset(numKeys + offset)
        case other => other
      }
      offset += f.aggBufferAttributes.size
      bound
    }
  }
  private[this] val bufferAttributes = functions.flatMap(_.aggBufferAttributes)
  private[this] val bufferTypes: Array[DataType] = bufferAttributes.map(_.dataType).toArray
  private[this] val imperatives = functions.collect { case i: ImperativeAggregate => i }.toArray
  private[this] val typed = functions.collect { case t: TypedImperativeAggregate[_] => t }.toArray

  /** Buffer fields declarative functions fill, which may point into the input's memory. */
  private[this] val declarativeObjects: Array[Int] = {
    var offset = 0
    functions.flatMap { f =>
      val fields = f.aggBufferAttributes.indices.map(_ + offset)
      offset += fields.size
      f match {
        case _: DeclarativeAggregate =>
          fields.filterNot(i => UnsafeRow.isFixedLength(bufferTypes(i)))
        case _ => Nil
      }
    }.toArray
  }

  private[this] val initial = mutableProjection(
    functions.flatMap {
      case d: DeclarativeAggregate => d.initialValues
      case i => Seq.fill(i.aggBufferAttributes.size)(NoOp)
    },
    Nil)
  private[this] val merge = mutableProjection(
    functions.flatMap {
      case d: DeclarativeAggregate => d.mergeExpressions
      case i => Seq.fill(i.aggBufferAttributes.size)(NoOp)
    },
    bufferAttributes ++ input)
  private[this] val keyOf = unsafeProjection(keys, input)
  private[this] val result = unsafeProjection(keys ++ bufferAttributes, keys ++ bufferAttributes)
  private[this] val joined = new JoinedRow
  private[this] val inputRow = new UnsafeRow(input.size)
  private[this] val keyRow = new UnsafeRow(numKeys)
  private[this] val bufferRow = new UnsafeRow(bufferAttributes.size)

  private[this] val emptyBuffer: Array[Byte] = if (binary) {
    val row = newBuffer()
    // One row: not worth generating code for.
    InterpretedUnsafeProjection
      .createProjection(bufferTypes.toSeq.zipWithIndex.map { case (t, i) =>
        BoundReference(i, t, nullable = true)
      })
      .apply(row)
      .getBytes
  } else null

  private def newBuffer(): SpecificInternalRow = {
    val row = new SpecificInternalRow(bufferTypes.toSeq)
    initial.target(row).apply(InternalRow.empty)
    imperatives.foreach(_.initialize(row))
    row
  }

  private def mergeInto(buffer: InternalRow): Unit = {
    merge.target(buffer).apply(joined(buffer, inputRow))
    var i = 0
    while (i < imperatives.length) {
      imperatives(i).merge(buffer, inputRow)
      i += 1
    }
  }

  override def newTaskRecords(budget: Budget, numPartitions: Int): TaskRecords =
    new KeptRows(budget, numPartitions)

  override def newCombined(budget: Budget): CombinedRecords =
    if (binary) new BinaryRecords(budget) else new ObjectRows(budget)

  // A partial aggregate's output holds one row per key, so each row met a key held before
  // or made one.
  override def fold(
      task: TaskRecords,
      partition: Int,
      from: Int,
      into: CombinedRecords): FoldCount = {
    val kept = task.asInstanceOf[KeptRows]
    newBytes = 0L
    merged = 0L
    val next = into match {
      case b: BinaryRecords => foldBinary(kept, partition, from, b)
      case o => foldObjects(kept, partition, from, o.asInstanceOf[ObjectRows])
    }
    FoldCount(next - from, merged, newBytes, next)
  }

  private[this] val batchOffsets = new Array[Int](Batch)
  private[this] val batchLengths = new Array[Int](Batch)
  private[this] val batchHashes = new Array[Int](Batch)

  /** Of the current fold: rows that met a key held, bytes of the rows made new records of. */
  private[this] var merged = 0L
  private[this] var newBytes = 0L

  /** What the loads that bring a batch's slots and records into cache read (kept, unused). */
  private[this] var touched = 0L

  /**
   * Folds rows a batch at a time: first a load of each row's slot and of the record there
   * (independent loads the processor overlaps: a partition's records are read in no order, so
   * each would otherwise wait for memory in turn), then each row in order, until one finds no
   * room; answers the index of the first row not folded.
   */
  private def foldBinary(rows: KeptRows, partition: Int, from: Int, into: BinaryRecords): Int =
    rows.foreachBatch(partition, from, batchOffsets, batchLengths, batchHashes) { (page, n) =>
      var sink = 0L
      val mask = into.capacity - 1
      var i = 0
      if (mask >= 0) {
        while (i < n) {
          val slot = into.slots(BinaryRecords.slotOf(batchHashes(i), mask))
          if (slot != 0) {
            val address = BinaryRecords.addressOf(slot)
            sink += Platform.getLong(into.pages.page(address), into.pages.offset(address))
          }
          i += 1
        }
      }
      touched += sink
      i = 0
      var room = true
      while (room && i < n) {
        inputRow.pointTo(page, Platform.BYTE_ARRAY_OFFSET + batchOffsets(i), batchLengths(i))
        room = foldRow(into, batchHashes(i))
        if (room) i += 1
      }
      i
    }

  /** Folds `inputRow`, whose keys hash to `hash`; false, folding nothing, if it finds no room. */
  private def foldRow(into: BinaryRecords, hash: Int): Boolean = {
    var found = find(into, hash)
    if (found >= 0) merged += 1
    else {
      if (!into.roomForOneMore()) return false
      val key = keyOf(inputRow)
      val keyLength = key.getSizeInBytes
      val record = into.pages.allocate(KeptRows.Header + keyLength + emptyBuffer.length)
      if (record < 0) return false
      val page = into.pages.page(record)
      val offset = into.pages.offset(record)
      Platform.putInt(page, offset, keyLength)
      Platform.putInt(page, offset + 4, emptyBuffer.length)
      key.writeToMemory(page, offset + KeptRows.Header)
      Platform.copyMemory(
        emptyBuffer,
        Platform.BYTE_ARRAY_OFFSET,
        page,
        offset + KeptRows.Header + keyLength,
        emptyBuffer.length)
      val mask = into.capacity - 1
      var slot = BinaryRecords.slotOf(hash, mask)
      while (into.slots(slot) != 0) slot = (slot + 1) & mask
      into.slots(slot) = BinaryRecords.slot(record, hash)
      into.size += 1
      newBytes += inputRow.getSizeInBytes
      found = record
    }
    pointToBuffer(into, found)
    mergeInto(bufferRow)
    true
  }

  /** The record of `inputRow`'s keys, which hash to `hash`, or -1. */
  private def find(into: BinaryRecords, hash: Int): Int = {
    val mask = into.capacity - 1
    if (mask < 0) return -1
    var slot = BinaryRecords.slotOf(hash, mask)
    while (into.slots(slot) != 0) {
      val held = into.slots(slot)
      if (BinaryRecords.hashOf(held) == hash && {
          pointToKey(into, BinaryRecords.addressOf(held))
          keysInPlace.same(inputRow, keyRow)
        }) return BinaryRecords.addressOf(held)
      slot = (slot + 1) & mask
    }
    -1
  }

  private def pointToKey(into: BinaryRecords, record: Int): Unit = {
    val page = into.pages.page(record)
    val offset = into.pages.offset(record)
    keyRow.pointTo(page, offset + KeptRows.Header, Platform.getInt(page, offset))
  }

  private def pointToBuffer(into: BinaryRecords, record: Int): Unit = {
    val page = into.pages.page(record)
    val offset = into.pages.offset(record)
    val keyLength = Platform.getInt(page, offset)
    keyRow.pointTo(page, offset + KeptRows.Header, keyLength)
    bufferRow.pointTo(page, offset + KeptRows.Header + keyLength, Platform.getInt(page, offset + 4))
  }

  private def foldObjects(rows: KeptRows, partition: Int, from: Int, into: ObjectRows): Int =
    rows.foreachBatch(partition, from, batchOffsets, batchLengths, batchHashes) { (page, n) =>
      var i = 0
      var room = true
      while (room && i < n) {
        inputRow.pointTo(page, Platform.BYTE_ARRAY_OFFSET + batchOffsets(i), batchLengths(i))
        room = foldObjectRow(into)
        if (room) i += 1
      }
      i
    }

  /** Folds `inputRow` into its key's buffer; false, folding nothing, if it finds no room. */
  private def foldObjectRow(into: ObjectRows): Boolean = {
    val key = keyOf(inputRow)
    var buffer = into.map.get(key)
    // Typed buffers grow as they merge: each merge is taken to bring what its row holds.
    val grows = (if (buffer == null) key.getSizeInBytes + ObjectOverhead else 0L) +
      (if (buffer == null || typed.nonEmpty) inputRow.getSizeInBytes else 0L)
    if (grows > 0 && !into.reserve(grows)) return false
    if (buffer == null) {
      buffer = newBuffer()
      into.map.put(key.copy(), buffer)
      newBytes += inputRow.getSizeInBytes
    } else merged += 1
    mergeInto(buffer)
    // Values the merge took from the input row point into the task's pages, which go.
    var i = 0
    while (i < declarativeObjects.length) {
      val field = declarativeObjects(i)
      if (!buffer.isNullAt(field)) {
        buffer.update(field, InternalRow.copyValue(buffer.get(field, bufferTypes(field))))
      }
      i += 1
    }
    true
  }

  override def write(partition: Int, records: CombinedRecords, out: SerializationStream): Unit = {
    // The exchange's serializer writes no keys: the reduce side reads rows only.
    val key: Any = partition
    records match {
      case b: BinaryRecords =>
        var i = 0
        while (i < b.slots.length) {
          if (b.slots(i) != 0) {
            pointToBuffer(b, BinaryRecords.addressOf(b.slots(i)))
            out.writeKey(key)
            out.writeValue(result(joined(keyRow, bufferRow)))
          }
          i += 1
        }
      case o =>
        o.asInstanceOf[ObjectRows].map.forEach { (k, buffer) =>
          typed.foreach(_.serializeAggregateBufferInPlace(buffer))
          out.writeKey(key)
          out.writeValue(result(joined(k, buffer)))
        }
    }
  }

  override def writeKept(
      task: TaskRecords,
      partition: Int,
      from: Int,
      out: SerializationStream): Unit =
    task
      .asInstanceOf[KeptRows]
      .foreachBatch(partition, from, batchOffsets, batchLengths, batchHashes) { (page, n) =>
        var i = 0
        while (i < n) {
          inputRow.pointTo(page, Platform.BYTE_ARRAY_OFFSET + batchOffsets(i), batchLengths(i))
          out.writeKey(batchHashes(i))
          out.writeValue(inputRow)
          i += 1
        }
        n
      }
}

private object SqlFoldEngine {

  /** Combined rows of objects: a key's buffer is a row of the buffer's values. */
  type ObjectRows = CombinedObjects[UnsafeRow, SpecificInternalRow]

  /** Rows whose slots and records are brought into cache together. */
  private val Batch = 16

  /** Bytes taken to be held per object row beyond its key and values: map entry, row, boxes. */
  private val ObjectOverhead = 96
}
