package org.apache.spark.shuffle.adaptive.combine.sql

import org.apache.spark.serializer.SerializationStream
import org.apache.spark.sql.catalyst.expressions.{Attribute, BoundReference, InterpretedUnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression
import org.apache.spark.unsafe.Platform
import org.apache.spark.shuffle.adaptive.combine.Budget

/**
 * Folds a partial aggregate's rows into [[BinaryRecords]], every buffer field updated in place
 * where it lies ([[SqlCombine]] chooses it where every field can be).
 */
private[sql] final class SqlBinaryFold(
    aggregates: Seq[AggregateExpression],
    input: Seq[Attribute],
    numKeys: Int)
    extends SqlFoldEngine[BinaryRecords](aggregates, input, numKeys) {

  private[this] val keysInPlace = new KeysInPlace(input.take(numKeys).map(_.dataType))
  private[this] val keyRow = new UnsafeRow(numKeys)
  private[this] val bufferRow = new UnsafeRow(bufferAttributes.size)

  private[this] val emptyBuffer: Array[Byte] = {
    val row = newBuffer()
    // One row: not worth generating code for.
    InterpretedUnsafeProjection
      .createProjection(bufferTypes.toSeq.zipWithIndex.map { case (t, i) =>
        BoundReference(i, t, nullable = true)
      })
      .apply(row)
      .getBytes
  }

  override def newCombined(budget: Budget): BinaryRecords = new BinaryRecords(budget)

  /** What the loads that bring a batch's slots and records into cache read (kept, unused). */
  private[this] var touched = 0L

  /**
   * Folds rows a batch at a time: first a load of each row's slot and of the record there
   * (independent loads the processor overlaps: a partition's records are read in no order, so
   * each would otherwise wait for memory in turn), then each row in order, until one finds no
   * room; answers the index of the first row not folded.
   */
  override protected def foldRows(
      rows: KeptRows,
      partition: Int,
      from: Int,
      into: BinaryRecords): Int =
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

  override def write(partition: Int, records: BinaryRecords, out: SerializationStream): Unit = {
    // The exchange's serializer writes no keys: the reduce side reads rows only.
    val key: Any = partition
    var i = 0
    while (i < records.slots.length) {
      if (records.slots(i) != 0) {
        pointToBuffer(records, BinaryRecords.addressOf(records.slots(i)))
        out.writeKey(key)
        out.writeValue(result(joined(keyRow, bufferRow)))
      }
      i += 1
    }
  }
}
