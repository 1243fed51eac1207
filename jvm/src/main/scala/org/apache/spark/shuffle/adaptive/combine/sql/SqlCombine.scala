package org.apache.spark.shuffle.adaptive.combine.sql

import org.apache.spark.sql.catalyst.expressions.Attribute
import org.apache.spark.sql.catalyst.expressions.aggregate.{AggregateExpression, Partial, PartialMerge, TypedImperativeAggregate}
import org.apache.spark.sql.catalyst.plans.logical.Aggregate
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.catalyst.util.UnsafeRowUtils
import org.apache.spark.sql.execution.{SparkPlan, WholeStageCodegenExec}
import org.apache.spark.sql.execution.aggregate.BaseAggregateExec
import org.apache.spark.shuffle.adaptive.combine.{CombineEngine, CombineSpec}

/**
 * A Spark SQL partial aggregate's output, which combines as the aggregate's next step does: a
 * row is `keys ++ buffers` (the grouping keys, then each function's partial buffer), and two
 * rows of one key merge into one by each function's own merge, with Spark's generated code
 * ([[SqlFoldEngine]]), so every aggregate Spark declares combines, and no arithmetic is written
 * here. The exchange hands each row with the hash of its keys it partitioned it by.
 *
 * Combined records are binary rows updated in place where every buffer field can be
 * ([[BinaryRecords]]: sum, count, min and max of numbers, avg, bit operations, variance,
 * approx_count_distinct, ...), and rows of objects otherwise (min of strings, collect_list,
 * percentile, typed aggregators, ...), whose merges cost several times more: each kind breaks
 * even at its own share of rows meeting a key held ([[CombineSpec.breakEven]]).
 *
 * @param input the partial aggregate's output attributes: the keys, then the buffers
 */
private[spark] sealed abstract class SqlCombine(
    aggregates: Seq[AggregateExpression],
    input: Seq[Attribute],
    numKeys: Int)
    extends CombineSpec {

  // The exchange keys each row by the hash of its keys.
  override def keyHash(key: Any): Int = key.asInstanceOf[Int]
}

/** Binary rows updated in place ([[SqlBinaryFold]]). */
private[sql] final class InPlaceSqlCombine(
    aggregates: Seq[AggregateExpression],
    input: Seq[Attribute],
    numKeys: Int)
    extends SqlCombine(aggregates, input, numKeys) {

  override type Task = KeptRows
  override type Combined = BinaryRecords

  override def kind: String = "sql"

  override def breakEven: Double = SqlCombine.BinaryBreakEven

  override def newEngine(): CombineEngine[KeptRows, BinaryRecords] =
    new SqlBinaryFold(aggregates, input, numKeys)
}

/** Rows of objects ([[SqlObjectFold]]). */
private[sql] final class ObjectSqlCombine(
    aggregates: Seq[AggregateExpression],
    input: Seq[Attribute],
    numKeys: Int)
    extends SqlCombine(aggregates, input, numKeys) {

  override type Task = KeptRows
  override type Combined = SqlFoldEngine.ObjectRows

  override def kind: String = "sql, objects"

  override def breakEven: Double = SqlCombine.ObjectBreakEven

  override def newEngine(): CombineEngine[KeptRows, SqlFoldEngine.ObjectRows] =
    new SqlObjectFold(aggregates, input, numKeys)
}

private[spark] object SqlCombine {

  /**
   * Break-even shares of rows meeting a key held ([[CombineSpec.breakEven]]): a fold costs about
   * 180 ns a row where the sort shuffle's write and read of a row cost 580 to 950 ns (the
   * `aggregate` profile, docs/measurements.md), so folding pays from a share of 0.2 to 0.3. Rows
   * of objects merge through a hash map of objects and their functions' own code (a typed
   * buffer is deserialized to merge), several times a binary row's cost: half of them must meet.
   */
  val BinaryBreakEven = 0.25
  val ObjectBreakEven = 0.5

  /**
   * In place, on binary rows, when every buffer field is mutable there (and none an object);
   * else as rows of objects.
   */
  def apply(aggregates: Seq[AggregateExpression], input: Seq[Attribute], numKeys: Int): SqlCombine =
    if (!aggregates.exists(_.aggregateFunction.isInstanceOf[TypedImperativeAggregate[_]]) &&
      Aggregate.isAggregateBufferMutable(
        DataTypeUtils.fromAttributes(aggregates.flatMap(_.aggregateFunction.aggBufferAttributes))))
      new InPlaceSqlCombine(aggregates, input, numKeys)
    else new ObjectSqlCombine(aggregates, input, numKeys)

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
      else Right(SqlCombine(agg.aggregateExpressions, agg.output, agg.groupingExpressions.size))
    case other => Left(s"the rows of ${other.nodeName}, not of a partial aggregate")
  }
}
