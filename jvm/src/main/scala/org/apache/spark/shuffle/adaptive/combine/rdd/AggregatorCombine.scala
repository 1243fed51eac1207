package org.apache.spark.shuffle.adaptive.combine.rdd

import org.apache.spark.{Aggregator, ShuffleDependency}
import org.apache.spark.shuffle.adaptive.combine.{CombineEngine, CombineSpec, CombinedObjects}

/**
 * An RDD shuffle with map-side combine (`reduceByKey`, `aggregateByKey`, `combineByKey`): its
 * map tasks write `(key, value)` records that the sort shuffle combines per task with
 * `createCombiner` and `mergeValue`, and its reduce tasks merge the combiners with
 * `mergeCombiners`. A map task that folds combines its records itself, as the sort shuffle
 * would have (so they never reach its file), and its combiners are merged into the executor's
 * with `mergeCombiners`: records of the same kind as the files'.
 *
 * Where the keys are integers and the combiners numbers (the dependency's class tags say so:
 * `reduceByKey(_ + _)` over `(Long, Long)`, say), both are kept as primitives in arrays
 * ([[NumberCombiners]]): the executor's records live across its map tasks, so as objects every
 * merge would store a new box into the old generation, which the profile showed costing more
 * garbage collection than the fold saved. Other records are objects ([[ObjectCombiners]]).
 */
private[spark] sealed abstract class AggregatorCombine(aggregator: Aggregator[Any, Any, Any])
    extends CombineSpec {

  override def keyHash(key: Any): Int = if (key == null) 0 else key.hashCode
}

/** Integer keys and number combiners, kept as primitives ([[NumberCombiners]]). */
private[combine] final class NumberAggregatorCombine(
    aggregator: Aggregator[Any, Any, Any],
    keys: NumberKind,
    combiners: NumberKind)
    extends AggregatorCombine(aggregator) {

  override type Task = TaskNumbers
  override type Combined = ExecutorNumbers

  override def kind: String = "rdd, numbers"

  override def breakEven: Double = AggregatorCombine.NumbersBreakEven

  override def newEngine(): CombineEngine[TaskNumbers, ExecutorNumbers] =
    new NumberCombiners(aggregator, keys, combiners)
}

/** Any other records, as objects ([[ObjectCombiners]]). */
private[combine] final class ObjectAggregatorCombine(aggregator: Aggregator[Any, Any, Any])
    extends AggregatorCombine(aggregator) {

  override type Task = TaskCombiners
  override type Combined = CombinedObjects[Any, Any]

  override def kind: String = "rdd"

  override def breakEven: Double = AggregatorCombine.ObjectsBreakEven

  override def newEngine(): CombineEngine[TaskCombiners, CombinedObjects[Any, Any]] =
    new ObjectCombiners(aggregator)
}

private[spark] object AggregatorCombine {

  /**
   * Break-even shares of records meeting a key held ([[CombineSpec.breakEven]]). A map task that
   * folds combines its records in place of the sort shuffle's map-side combine, without its
   * sorting and spilling: for integer keys and numbers that alone cost sort more than folding
   * everything (the `reducebykey` profile, docs/measurements.md), so a tenth suffices; combiners
   * of objects merge in a hash map of objects, whose merges cost what sort's do: a third.
   */
  val NumbersBreakEven = 0.1
  val ObjectsBreakEven = 0.3

  /** How `dependency`'s records combine: by its map-side combine's aggregator, if it has one. */
  def of(dependency: ShuffleDependency[_, _, _]): Option[AggregatorCombine] =
    dependency.aggregator.filter(_ => dependency.mapSideCombine).map { a =>
      val numbers = for {
        keys <- NumberKind.ofKeys(dependency.keyClassName)
        combiners <- dependency.combinerClassName.flatMap(NumberKind.ofCombiners)
      } yield (keys, combiners)
      AggregatorCombine(a.asInstanceOf[Aggregator[Any, Any, Any]], numbers)
    }

  /** Combining with `aggregator`: as primitives where `numbers` names the kinds of both. */
  def apply(
      aggregator: Aggregator[Any, Any, Any],
      numbers: Option[(NumberKind, NumberKind)]): AggregatorCombine = numbers match {
    case Some((keys, combiners)) => new NumberAggregatorCombine(aggregator, keys, combiners)
    case None => new ObjectAggregatorCombine(aggregator)
  }
}

/**
 * A primitive type records are kept as, by the bits of a long: how a boxed value of it becomes
 * those bits and back.
 */
private[combine] sealed abstract class NumberKind extends Serializable {

  /** Whether `value` is a box of this kind (what the class tags promised). */
  def boxes(value: Any): Boolean

  def bits(value: Any): Long

  def box(bits: Long): Any
}

private[combine] object NumberKind {

  case object Longs extends NumberKind {
    override def boxes(value: Any): Boolean = value.isInstanceOf[java.lang.Long]
    override def bits(value: Any): Long = value.asInstanceOf[java.lang.Long].longValue
    override def box(bits: Long): Any = java.lang.Long.valueOf(bits)
  }

  case object Ints extends NumberKind {
    override def boxes(value: Any): Boolean = value.isInstanceOf[java.lang.Integer]
    override def bits(value: Any): Long = value.asInstanceOf[java.lang.Integer].longValue
    override def box(bits: Long): Any = java.lang.Integer.valueOf(bits.toInt)
  }

  case object Doubles extends NumberKind {
    override def boxes(value: Any): Boolean = value.isInstanceOf[java.lang.Double]
    override def bits(value: Any): Long =
      java.lang.Double.doubleToRawLongBits(value.asInstanceOf[java.lang.Double].doubleValue)
    override def box(bits: Long): Any =
      java.lang.Double.valueOf(java.lang.Double.longBitsToDouble(bits))
  }

  /** Keys compare by their bits: integers only (two doubles may be equal with other bits). */
  def ofKeys(className: String): Option[NumberKind] = className match {
    case "long" => Some(Longs)
    case "int" => Some(Ints)
    case _ => None
  }

  def ofCombiners(className: String): Option[NumberKind] = className match {
    case "long" => Some(Longs)
    case "int" => Some(Ints)
    case "double" => Some(Doubles)
    case _ => None
  }
}
