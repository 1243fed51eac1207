package org.apache.spark.shuffle.adaptive.sql

import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.serializer.SerializationStream
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, BoundReference, Expression, InterpretedMutableProjection, InterpretedUnsafeProjection, JoinedRow, MutableProjection, SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.BindReferences.bindReferences
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, DeclarativeAggregate, ImperativeAggregate, NoOp, Partial, PartialMerge, TypedImperativeAggregate}
import org.apache.spark.sql.catalyst.plans.logical.Aggregate
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.catalyst.util.UnsafeRowUtils
import org.apache.spark.sql.execution.{SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{BooleanType, ByteType, DataType, DateType, DayTimeIntervalType, DecimalType, DoubleType, FloatType, IntegerType, LongType, ShortType, TimestampNTZType, TimestampType, YearMonthIntervalType}
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods
import org.apache.spark.unsafe.hash.Murmur3_x86_32
import org.apache.spark.shuffle.adaptive.combine.{Budget, CombineEngine, CombineSpec, CombinedObjects, CombinedRecords, FoldCount, TaskRecords}

/**
 * A Spark SQL partial aggregate's output, which combines as the aggregate's next step does: a
 * row is `keys ++ buffers` (the grouping keys, then each function's partial buffer), and two
 * rows of one key merge into one by each function's own merge, with Spark's generated code
 * (the merge expressions of declarative functions, `merge` of imperative ones, the object merge
 * of typed imperative ones, as `AggregationIterator` does for a PartialMerge aggregate), so
 * every aggregate Spark declares combines, and no arithmetic is written here.
 *
 * Combined records are binary rows in byte pages where every buffer field can be updated in
 * place (fixed width, as for Spark's UnsafeFixedWidthAggregationMap: sum, count, min and max
 * of numbers, avg, bit operations, variance, approx_count_distinct, ...), and rows of objects
 * otherwise (min of strings, collect_list, percentile, typed aggregators, ...).
 *
 * @param input the partial aggregate's output attributes: the keys, then the buffers
 */
private[spark] final class SqlCombine(
    aggregates: Seq[AggregateExpression],
    input: Seq[Attribute],
    numKeys: Int)
    extends CombineSpec {

  override def kind: String = "sql"

  override def newEngine(compiled: Boolean): CombineEngine =
    new SqlCombine.Engine(aggregates, input, numKeys, compiled)
}

private[spark] object SqlCombine {

  /**
   * How the rows of `plan` combine, when it is a partial aggregate (hash, object hash or sort
   * based; Partial or PartialMerge, compiled or not) whose output is its keys then its
   * functions' buffers, as Spark plans every partial aggregate, over keys whose equal values
   * have equal bytes (no key of a collation that ignores case or accents, for instance).
   */
  def of(plan: SparkPlan): Option[SqlCombine] = explained(plan).toOption

  /** As [[of]], or why the rows of `plan` do not combine. */
  def explained(plan: SparkPlan): Either[String, SqlCombine] = plan match {
    case codegen: WholeStageCodegenExec => explained(codegen.child)
    case agg: BaseAggregateExec =>
      val notPartial =
        agg.aggregateExpressions.filterNot(a => a.mode == Partial || a.mode == PartialMerge)
      val unstableKeys =
        agg.groupingExpressions.filterNot(k => UnsafeRowUtils.isBinaryStable(k.dataType))
      lazy val layout = agg.groupingExpressions.map(_.toAttribute) ++
        agg.aggregateExpressions.flatMap(_.aggregateFunction.inputAggBufferAttributes)
      if (agg.isStreaming) Left("a streaming aggregate's rows")
      else if (notPartial.nonEmpty)
        Left(s"not a partial aggregate's rows (${notPartial.map(_.mode).distinct.mkString(", ")})")
      else if (unstableKeys.nonEmpty)
        Left(
          s"keys whose equal values may differ in bytes (${unstableKeys.map(_.dataType.simpleString).mkString(", ")})")
      else if (layout.map(_.exprId) != agg.output.map(_.exprId))
        Left("the partial aggregate's output is not its keys then its buffers")
      else Right(new SqlCombine(agg.aggregateExpressions, agg.output, agg.groupingExpressions.size))
    case other => Left(s"the rows of ${other.nodeName}, not of a partial aggregate")
  }

  /** Bytes of a record's header in a page: its (or its key's and buffer's) lengths. */
  private val Header = 8

  /** Where a record lies: its page's index in the high half, its offset in the low half. */
  private def address(page: Int, offset: Int): Long = (page.toLong << 32) | offset.toLong
  private def pageOf(address: Long): Int = (address >>> 32).toInt
  private def offsetOf(address: Long): Int = address.toInt

  /**
   * Byte pages, each as large as the last twice over (from `first` up to `max`, or what one
   * record needs): records never move. Their bytes are reserved in `budget` before they are
   * allocated (a fold reserves its worst case), and given back by [[release]].
   */
  private final class Pages(budget: Budget, first: Int, max: Int) {
    var pages = new Array[Array[Byte]](4)
    var count = 0
    private[this] var used = 0
    private[this] var size = first
    var bytes = 0L

    /** Room for `length` bytes: its address. */
    def allocate(length: Int): Long = {
      if (count == 0 || used + length > pages(count - 1).length) {
        val pageBytes = math.max(length, size)
        if (count == pages.length) pages = java.util.Arrays.copyOf(pages, count * 2)
        pages(count) = new Array[Byte](pageBytes)
        count += 1
        used = 0
        bytes += pageBytes
        size = math.min(max, size * 2)
      }
      val at = address(count - 1, used)
      used += length
      at
    }

    def nextPageBytes(length: Int): Int = math.max(length, size)

    def release(): Unit = {
      budget.release(bytes)
      bytes = 0
      pages = new Array[Array[Byte]](0)
      count = 0
    }
  }

  /**
   * A map task's rows by partition, each partition's back to back in pages of its own (each as
   * large as its last twice over, up to [[MaxRowPage]], which bounds what a partition's last page
   * leaves unused), so a fold reads them in order.
   */
  private final class Rows(budget: Budget, numPartitions: Int) extends TaskRecords {
    private[this] val pages = new Array[Array[Array[Byte]]](numPartitions)
    private[this] val used = new Array[Array[Int]](numPartitions)
    private[this] val pageCounts = new Array[Int](numPartitions)
    private[this] val counts = new Array[Int](numPartitions)
    private[this] val rowBytes = new Array[Long](numPartitions)
    private[this] var reserved = 0L
    private[this] var full = false

    override def add(partition: Int, record: Product2[Any, Any]): Boolean = !full && {
      val row = record._2.asInstanceOf[UnsafeRow]
      val length = row.getSizeInBytes
      val n = pageCounts(partition)
      val fits = n > 0 && used(partition)(n - 1) + Header + length <= pages(partition)(n - 1).length
      full = !fits && !newPage(partition, Header + length)
      if (!full) {
        val last = pageCounts(partition) - 1
        val page = pages(partition)(last)
        val at = used(partition)(last)
        Platform.putInt(page, Platform.BYTE_ARRAY_OFFSET + at, length)
        row.writeToMemory(page, Platform.BYTE_ARRAY_OFFSET + at + Header)
        used(partition)(last) = at + Header + length
        counts(partition) += 1
        rowBytes(partition) += length
      }
      !full
    }

    private def newPage(partition: Int, length: Int): Boolean = {
      val n = pageCounts(partition)
      val size =
        math.max(
          length,
          if (n == 0) 512 else math.min(MaxRowPage, 2 * pages(partition)(n - 1).length))
      budget.reserve(size) && {
        reserved += size
        if (n == 0) {
          pages(partition) = new Array[Array[Byte]](4)
          used(partition) = new Array[Int](4)
        } else if (n == pages(partition).length) {
          pages(partition) = java.util.Arrays.copyOf(pages(partition), 2 * n)
          used(partition) = java.util.Arrays.copyOf(used(partition), 2 * n)
        }
        pages(partition)(n) = new Array[Byte](size)
        pageCounts(partition) = n + 1
        true
      }
    }

    override def rows(partition: Int): Int = counts(partition)
    override def bytes(partition: Int): Long = rowBytes(partition)
    override def partitions: Iterator[Int] = counts.indices.iterator.filter(counts(_) > 0)

    override def release(): Unit = {
      budget.release(reserved)
      reserved = 0
      java.util.Arrays.fill(pages.asInstanceOf[Array[AnyRef]], null)
    }

    /**
     * Hands `f` the rows of `partition` in batches, in the order they came: `f(page, n)` gets n
     * rows of `page`, row i at `Platform.BYTE_ARRAY_OFFSET + offsets(i)`, `lengths(i)` long.
     */
    def foreachBatch(partition: Int, offsets: Array[Int], lengths: Array[Int])(
        f: (Array[Byte], Int) => Unit): Unit = {
      var i = 0
      while (i < pageCounts(partition)) {
        val page = pages(partition)(i)
        val end = used(partition)(i)
        var at = 0
        while (at < end) {
          var n = 0
          while (n < offsets.length && at < end) {
            val length = Platform.getInt(page, Platform.BYTE_ARRAY_OFFSET + at)
            offsets(n) = at + Header
            lengths(n) = length
            n += 1
            at += Header + length
          }
          f(page, n)
        }
        i += 1
      }
    }

  }

  /**
   * Combined rows whose buffers are updated in place: each record is `[key length][buffer
   * length][key][buffer]` in pages, found by an open-addressing table whose slot i holds the
   * record's address plus one (0: empty) at 2i and its key's hash at 2i + 1, side by side, so a
   * probe touches one cache line before the record's.
   */
  private final class BinaryRows(budget: Budget) extends CombinedRecords {
    val pages = new Pages(budget, 4 * 1024, MaxRecordPage)
    // Made by the first fold, within what it reserved.
    var slots = new Array[Long](0)
    var size = 0

    def capacity: Int = slots.length / 2

    override def rows: Long = size
    override def bytes: Long = pages.bytes + 8L * slots.length

    def resize(newCapacity: Int): Unit = {
      val old = slots
      slots = new Array[Long](2 * newCapacity)
      val mask = newCapacity - 1
      var i = 0
      while (i < old.length) {
        if (old(i) != 0) {
          var slot = old(i + 1).toInt & mask
          while (slots(2 * slot) != 0) slot = (slot + 1) & mask
          slots(2 * slot) = old(i)
          slots(2 * slot + 1) = old(i + 1)
        }
        i += 2
      }
    }

    override def free(): Unit = {
      budget.release(8L * slots.length)
      pages.release()
      slots = new Array[Long](0)
    }
  }

  /** Combined rows of objects: a key's buffer is a row of the buffer's values. */
  private type ObjectRows = CombinedObjects[UnsafeRow, SpecificInternalRow]

  private val InitialSlots = 16

  /** Rows whose slots and records are brought into cache together. */
  private val Batch = 16

  private val MaxRowPage = 64 * 1024

  /** The largest page of combined records: what a partition's last page leaves unused. */
  private val MaxRecordPage = 64 * 1024

  /**
   * The bytes of its 8-byte slot a value of `dataType` takes in an UnsafeRow where it is stored
   * in place (1, 2, 4 or 8), or 0 for a value stored elsewhere (strings, large decimals, ...).
   */
  private def slotWidth(dataType: DataType): Int = dataType match {
    case BooleanType | ByteType => 1
    case ShortType => 2
    case IntegerType | DateType | FloatType | _: YearMonthIntervalType => 4
    case LongType | DoubleType | TimestampType | TimestampNTZType | _: DayTimeIntervalType => 8
    case d: DecimalType if DecimalType.is64BitDecimalType(d) => 8
    case _ => 0
  }

  /** Bytes taken to be held per object row beyond its key and values: map entry, row, boxes. */
  private val ObjectOverhead = 96

  private final class Engine(
      aggregates: Seq[AggregateExpression],
      input: Seq[Attribute],
      numKeys: Int,
      compiled: Boolean)
      extends CombineEngine {

    // Projections, interpreted or generated, look for common subexpressions when made: on an
    // executor whose code for that is cold, that took longer than the sampled folds and half a
    // second of each executor's map stage where combining paid (the profile showed both), and
    // merge expressions (sums, counts, extrema) share none.
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

    private def mutableProjection(exprs: Seq[Expression], schema: Seq[Attribute]) =
      SQLConf.withExistingConf(withoutSubexpressions) {
        if (compiled) MutableProjection.create(exprs, schema)
        else InterpretedMutableProjection.createProjection(bindReferences(exprs, schema))
      }

    private def unsafeProjection(exprs: Seq[Expression], schema: Seq[Attribute]) =
      SQLConf.withExistingConf(withoutSubexpressions) {
        if (compiled) UnsafeProjection.create(exprs, schema)
        else InterpretedUnsafeProjection.createProjection(bindReferences(exprs, schema))
      }

    private[this] val keys = input.take(numKeys)

    // Where every key is stored in place (numbers, dates, timestamps, booleans), a row's key is
    // hashed and compared where it lies in the row, and projected only when it is new: the
    // profile showed two key projections per row folded (one for its hash, one to compare)
    // among the fold's largest costs. Null where some key is stored elsewhere.
    private[this] val keyWidths: Array[Int] = {
      val widths = keys.map(k => slotWidth(k.dataType)).toArray
      if (widths.forall(_ > 0)) widths else null
    }

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

    /** In place, on binary rows, when every buffer field is mutable there (and none an object). */
    private[this] val binary = typed.isEmpty &&
      Aggregate.isAggregateBufferMutable(DataTypeUtils.fromAttributes(bufferAttributes))

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
      new Rows(budget, numPartitions)

    override def newCombined(budget: Budget): CombinedRecords =
      if (binary) new BinaryRows(budget) else new ObjectRows(budget)

    override def worstCase(task: TaskRecords, partition: Int, into: CombinedRecords): Long = {
      val rows = task.rows(partition).toLong
      val bytes = task.bytes(partition)
      into match {
        case b: BinaryRows =>
          // Every row a new key: a record of key and buffer (one null-bit word more than the
          // row), pages up to one more, and the table grown to twice the keys.
          var capacity = math.max(b.capacity, InitialSlots).toLong
          while (2 * (b.size + rows) > capacity) capacity *= 2
          val grown = if (capacity > b.capacity) 16L * (capacity + b.capacity) else 0L
          bytes + rows * (Header + 8) + b.pages.nextPageBytes(MaxRecordPage) + grown
        case _ => 2 * bytes + rows * ObjectOverhead
      }
    }

    // A partial aggregate's output holds one row per key, so each row met a key held before
    // or made one.
    override def fold(task: TaskRecords, partition: Int, into: CombinedRecords): FoldCount = {
      val rows = task.asInstanceOf[Rows]
      val merged = into match {
        case b: BinaryRows => foldBinary(rows, partition, b)
        case o => foldObjects(rows, partition, o.asInstanceOf[ObjectRows])
      }
      FoldCount(task.rows(partition), merged)
    }

    private[this] val batchOffsets = new Array[Int](Batch)
    private[this] val batchLengths = new Array[Int](Batch)
    private[this] val batchHashes = new Array[Int](Batch)

    /** What the loads that bring a batch's slots and records into cache read (kept, unused). */
    private[this] var touched = 0L

    /**
     * Folds rows a batch at a time: first each row's key hash, and a load of its slot and of the
     * record there (independent loads the processor overlaps: a partition's records are read in
     * no order, so each would otherwise wait for memory in turn), then each row in order.
     */
    private def foldBinary(rows: Rows, partition: Int, into: BinaryRows): Long = {
      if (into.capacity == 0) into.resize(InitialSlots)
      var merged = 0L
      rows.foreachBatch(partition, batchOffsets, batchLengths) { (page, n) =>
        var sink = 0L
        var i = 0
        while (i < n) {
          inputRow.pointTo(page, Platform.BYTE_ARRAY_OFFSET + batchOffsets(i), batchLengths(i))
          val hash = if (keyWidths != null) keyHashInPlace() else keyOf(inputRow).hashCode
          batchHashes(i) = hash
          val address = into.slots(2 * (hash & (into.capacity - 1)))
          if (address != 0) {
            sink += Platform.getLong(
              into.pages.pages(pageOf(address - 1)),
              Platform.BYTE_ARRAY_OFFSET + offsetOf(address - 1))
          }
          i += 1
        }
        touched += sink
        i = 0
        while (i < n) {
          inputRow.pointTo(page, Platform.BYTE_ARRAY_OFFSET + batchOffsets(i), batchLengths(i))
          merged += foldRow(into, batchHashes(i))
          i += 1
        }
      }
      merged
    }

    /** Folds `inputRow`, whose key hashes to `hash`; 1 if it met a key held, else 0. */
    private def foldRow(into: BinaryRows, hash: Int): Long = {
      val projected = if (keyWidths != null) null else keyOf(inputRow)
      var merged = 0L
      val mask = into.capacity - 1
      var slot = hash & mask
      var found = -1L
      while (found < 0 && into.slots(2 * slot) != 0) {
        val record = into.slots(2 * slot) - 1
        if (into.slots(2 * slot + 1).toInt == hash &&
          (if (projected == null) sameKeyInPlace(into, record)
           else sameKey(into, record, projected))) {
          found = record
        } else slot = (slot + 1) & mask
      }
      if (found >= 0) merged += 1
      else {
        val key = if (projected == null) keyOf(inputRow) else projected
        val keyLength = key.getSizeInBytes
        val record =
          into.pages.allocate(Header + keyLength + emptyBuffer.length)
        val page = into.pages.pages(pageOf(record))
        val offset = Platform.BYTE_ARRAY_OFFSET + offsetOf(record)
        Platform.putInt(page, offset, keyLength)
        Platform.putInt(page, offset + 4, emptyBuffer.length)
        key.writeToMemory(page, offset + Header)
        Platform.copyMemory(
          emptyBuffer,
          Platform.BYTE_ARRAY_OFFSET,
          page,
          offset + Header + keyLength,
          emptyBuffer.length)
        into.slots(2 * slot) = record + 1
        into.slots(2 * slot + 1) = hash.toLong
        into.size += 1
        if (2 * into.size > into.capacity) into.resize(into.capacity * 2)
        found = record
      }
      pointToBuffer(into, found)
      mergeInto(bufferRow)
      merged
    }

    /** The key's value `k` of `row` (keys stored in place), as the bits of its slot it takes. */
    private def keyBits(row: UnsafeRow, k: Int): Long = keyWidths(k) match {
      case 8 => row.getLong(k)
      case 4 => row.getInt(k)
      case 2 => row.getShort(k)
      case _ => row.getByte(k)
    }

    /** The hash of `inputRow`'s key (keys stored in place), read where it lies. */
    private def keyHashInPlace(): Int = {
      var hash = 42
      var nulls = 0
      var k = 0
      while (k < keyWidths.length) {
        if (inputRow.isNullAt(k)) nulls = nulls * 31 + k + 1
        else hash = Murmur3_x86_32.hashLong(keyBits(inputRow, k), hash)
        k += 1
      }
      Murmur3_x86_32.hashInt(nulls, hash)
    }

    /** Whether the key of `record` is `inputRow`'s (keys stored in place), value by value. */
    private def sameKeyInPlace(into: BinaryRows, record: Long): Boolean = {
      val page = into.pages.pages(pageOf(record))
      val offset = Platform.BYTE_ARRAY_OFFSET + offsetOf(record)
      keyRow.pointTo(page, offset + Header, Platform.getInt(page, offset))
      var same = true
      var k = 0
      while (same && k < keyWidths.length) {
        val isNull = inputRow.isNullAt(k)
        same =
          isNull == keyRow.isNullAt(k) && (isNull || keyBits(inputRow, k) == keyBits(keyRow, k))
        k += 1
      }
      same
    }

    private def sameKey(into: BinaryRows, record: Long, key: UnsafeRow): Boolean = {
      val page = into.pages.pages(pageOf(record))
      val offset = Platform.BYTE_ARRAY_OFFSET + offsetOf(record)
      val length = Platform.getInt(page, offset)
      length == key.getSizeInBytes && ByteArrayMethods.arrayEquals(
        page,
        offset + Header,
        key.getBaseObject,
        key.getBaseOffset,
        length)
    }

    private def pointToBuffer(into: BinaryRows, record: Long): Unit = {
      val page = into.pages.pages(pageOf(record))
      val offset = Platform.BYTE_ARRAY_OFFSET + offsetOf(record)
      val keyLength = Platform.getInt(page, offset)
      keyRow.pointTo(page, offset + Header, keyLength)
      bufferRow.pointTo(page, offset + Header + keyLength, Platform.getInt(page, offset + 4))
    }

    private def foldObjects(rows: Rows, partition: Int, into: ObjectRows): Long = {
      var merged = 0L
      rows.foreachBatch(partition, batchOffsets, batchLengths) { (page, n) =>
        var i = 0
        while (i < n) {
          inputRow.pointTo(page, Platform.BYTE_ARRAY_OFFSET + batchOffsets(i), batchLengths(i))
          merged += foldObjectRow(into)
          i += 1
        }
      }
      merged
    }

    /** Folds `inputRow` into its key's buffer; 1 if it met a key held, else 0. */
    private def foldObjectRow(into: ObjectRows): Long = {
      val key = keyOf(inputRow)
      var buffer = into.map.get(key)
      val merged = if (buffer == null) 0L else 1L
      if (buffer == null) {
        buffer = newBuffer()
        into.map.put(key.copy(), buffer)
        into.held += key.getSizeInBytes + inputRow.getSizeInBytes + ObjectOverhead
      }
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
      // Typed buffers grow as they merge: count what each merge brings.
      if (typed.nonEmpty) into.held += inputRow.getSizeInBytes
      merged
    }

    override def write(partition: Int, records: CombinedRecords, out: SerializationStream): Unit = {
      val key: Any = partition
      records match {
        case b: BinaryRows =>
          var i = 0
          while (i < b.slots.length) {
            if (b.slots(i) != 0) {
              pointToBuffer(b, b.slots(i) - 1)
              out.writeKey(key)
              out.writeValue(result(joined(keyRow, bufferRow)))
            }
            i += 2
          }
        case o =>
          o.asInstanceOf[ObjectRows].map.forEach { (k, buffer) =>
            typed.foreach(_.serializeAggregateBufferInPlace(buffer))
            out.writeKey(key)
            out.writeValue(result(joined(k, buffer)))
          }
      }
    }
  }
}
