package org.apache.spark.shuffle.adaptive.combine

import scala.annotation.tailrec

import org.apache.spark.{Aggregator, OneToOneDependency, ShuffleDependency}
import org.apache.spark.rdd.RDD

/**
 * An RDD whose records combine by `combineSpec` (a Spark SQL partial aggregate's output, which
 * the plugin's exchange marks: sql/); a shuffle of its records (through narrow one-to-one steps,
 * such as assigning partition ids) is combined.
 */
private[spark] trait CombinableRecords {
  def combineSpec: CombineSpec
}

private[spark] object Combinable {

  /** One-to-one steps between a shuffle's records and the marked RDD that makes them. */
  private val MaxSteps = 3

  /**
   * How `dependency`'s records combine (on the driver, where its RDD is known): an RDD shuffle's
   * map-side combine, or the mark of the plugin's SQL exchange; None for any other shuffle.
   */
  def of(dependency: ShuffleDependency[_, _, _]): Option[CombineSpec] =
    dependency.aggregator match {
      case Some(aggregator) if dependency.mapSideCombine =>
        Some(new AggregatorCombine(aggregator.asInstanceOf[Aggregator[Any, Any, Any]]))
      case _ => marked(dependency.rdd, MaxSteps)
    }

  @tailrec
  private def marked(rdd: RDD[_], steps: Int): Option[CombineSpec] = rdd match {
    case records: CombinableRecords => Some(records.combineSpec)
    case _ if steps > 0 =>
      rdd.dependencies match {
        case Seq(narrow: OneToOneDependency[_]) => marked(narrow.rdd, steps - 1)
        case _ => None
      }
    case _ => None
  }
}
