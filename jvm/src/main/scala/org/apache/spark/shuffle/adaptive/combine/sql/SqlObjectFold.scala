package org.apache.spark.shuffle.adaptive.combine.sql

import org.apache.spark.serializer.SerializationStream
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, DeclarativeAggregate, TypedImperativeAggregate}
import org.apache.spark.unsafe.Platform
import org.apache.spark.shuffle.adaptive.combine.Budget
import org.apache.spark.shuffle.adaptive.combine.sql.SqlFoldEngine.{ObjectOverhead, ObjectRows}

/**
 * Folds a partial aggregate's rows into rows of objects, one buffer row per key, where some
 * buffer field cannot be updated in place (strings, collections, typed aggregators' objects).
 */
private[sql] final class SqlObjectFold(
    aggregates: Seq[AggregateExpression],
    input: Seq[Attribute],
    numKeys: Int)
    extends SqlFoldEngine[ObjectRows](aggregates, input, numKeys) {

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

  override def newCombined(budget: Budget): ObjectRows = new ObjectRows(budget)

  override protected def foldRows(
      rows: KeptRows,
      partition: Int,
      from: Int,
      into: ObjectRows): Int =
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

  override def write(partition: Int, records: ObjectRows, out: SerializationStream): Unit = {
    // The exchange's serializer writes no keys: the reduce side reads rows only.
    val key: Any = partition
    records.map.forEach { (k, buffer) =>
      typed.foreach(_.serializeAggregateBufferInPlace(buffer))
      out.writeKey(key)
      out.writeValue(result(joined(k, buffer)))
    }
  }
}
