package org.apache.spark.shuffle.adaptive.combine.sql

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.{BooleanType, ByteType, DataType, DateType, FloatType, IntegerType, ShortType, YearMonthIntervalType}
import org.apache.spark.unsafe.array.ByteArrayMethods

/**
 * The grouping keys of a partial aggregate's rows (its first fields, of `types`), compared where
 * they lie in two rows, field by field, without projecting either: a value stored in its field's
 * slot by the bits of its width, one stored past the slots (strings, large decimals, structs) by
 * its bytes, which are equal for equal keys (the exchange combines only keys whose equal values
 * have equal bytes). The profile showed a key projection per row folded among the fold's largest
 * costs; a key is projected only when it is new.
 */
private[sql] final class KeysInPlace(types: Seq[DataType]) {

  // 1, 2, 4 or 8: the bytes of its slot a value takes; 0: stored past the slots.
  private[this] val widths: Array[Int] = types.map { t =>
    if (!UnsafeRow.isFixedLength(t)) 0
    else
      t match {
        case BooleanType | ByteType => 1
        case ShortType => 2
        case IntegerType | DateType | FloatType | _: YearMonthIntervalType => 4
        case _ => 8
      }
  }.toArray

  /** Whether the keys of `a` and `b` are equal. */
  def same(a: UnsafeRow, b: UnsafeRow): Boolean = {
    var k = 0
    while (k < widths.length) {
      val isNull = a.isNullAt(k)
      if (isNull != b.isNullAt(k)) return false
      if (!isNull) {
        val equal = widths(k) match {
          case 8 => a.getLong(k) == b.getLong(k)
          case 4 => a.getInt(k) == b.getInt(k)
          case 2 => a.getShort(k) == b.getShort(k)
          case 1 => a.getByte(k) == b.getByte(k)
          case _ =>
            val at = a.getLong(k)
            val bt = b.getLong(k)
            val length = at.toInt
            length == bt.toInt && ByteArrayMethods.arrayEquals(
              a.getBaseObject,
              a.getBaseOffset + (at >>> 32),
              b.getBaseObject,
              b.getBaseOffset + (bt >>> 32),
              length)
        }
        if (!equal) return false
      }
      k += 1
    }
    true
  }
}
