package org.apache.spark.shuffle.adaptive.combine.sql

import scala.jdk.CollectionConverters._

import org.apache.spark.TaskContext
import org.apache.spark.serializer.SerializationStream
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Attribute, Expression, JoinedRow, MutableProjection, SpecificInternalRow, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, DeclarativeAggregate, ImperativeAggregate, NoOp}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.DataType
import org.apache.spark.unsafe.Platform
import org.apache.spark.shuffle.adaptive.combine.{Budget, CombineEngine, CombinedObjects, CombinedRecords, FoldCount}

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
 * Records `C` are [[BinaryRecords]] updated in place ([[SqlBinaryFold]]) or rows of objects
 * ([[SqlObjectFold]]); what they share is here.
 */
private[sql] abstract class SqlFoldEngine[C <: CombinedRecords](
    aggregates: Seq[AggregateExpression],
    input: Seq[Attribute],
    numKeys: Int)
    extends CombineEngine[KeptRows, C] {
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

  // Imperative functions read and write the buffer row at their offset, the input row past
  // the keys (as a PartialMerge aggregate binds them).
  protected[this] val functions = {
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
  protected[this] val bufferAttributes = functions.flatMap(_.aggBufferAttributes)
  protected[this] val bufferTypes: Array[DataType] = bufferAttributes.map(_.dataType).toArray
  private[this] val imperatives = functions.collect { case i: ImperativeAggregate => i }.toArray

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
  protected[this] val keyOf = unsafeProjection(keys, input)
  protected[this] val result = unsafeProjection(keys ++ bufferAttributes, keys ++ bufferAttributes)
  protected[this] val joined = new JoinedRow
  protected[this] val inputRow = new UnsafeRow(input.size)

  protected def newBuffer(): SpecificInternalRow = {
    val row = new SpecificInternalRow(bufferTypes.toSeq)
    initial.target(row).apply(InternalRow.empty)
    imperatives.foreach(_.initialize(row))
    row
  }

  protected def mergeInto(buffer: InternalRow): Unit = {
    merge.target(buffer).apply(joined(buffer, inputRow))
    var i = 0
    while (i < imperatives.length) {
      imperatives(i).merge(buffer, inputRow)
      i += 1
    }
  }

  override def newTaskRecords(budget: Budget, numPartitions: Int): KeptRows =
    new KeptRows(budget, numPartitions)

  // A partial aggregate's output holds one row per key, so each row met a key held before
  // or made one.
  override def fold(task: KeptRows, partition: Int, from: Int, into: C): FoldCount = {
    newBytes = 0L
    merged = 0L
    val next = foldRows(task, partition, from, into)
    FoldCount(next - from, merged, newBytes, next)
  }

  /** Folds `rows` of `partition` from the `from`th on into `into`, until one finds no room. */
  protected def foldRows(rows: KeptRows, partition: Int, from: Int, into: C): Int

  protected[this] val batchOffsets = new Array[Int](Batch)
  protected[this] val batchLengths = new Array[Int](Batch)
  protected[this] val batchHashes = new Array[Int](Batch)

  /** Of the current fold: rows that met a key held, bytes of the rows made new records of. */
  protected[this] var merged = 0L
  protected[this] var newBytes = 0L

  override def writeKept(
      task: KeptRows,
      partition: Int,
      from: Int,
      out: SerializationStream): Unit =
    task
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

private[sql] object SqlFoldEngine {

  /** Combined rows of objects: a key's buffer is a row of the buffer's values. */
  type ObjectRows = CombinedObjects[UnsafeRow, SpecificInternalRow]

  /** Rows whose slots and records are brought into cache together. */
  val Batch = 16

  /** Bytes taken to be held per object row beyond its key and values: map entry, row, boxes. */
  val ObjectOverhead = 96
}
