package org.apache.spark.shuffle.adaptive.combine

import org.apache.spark.{Aggregator, ShuffleDependency}
import org.apache.spark.shuffle.adaptive.lineage.RddMarks

/**
 * An RDD whose records combine by `combineSpec` (a Spark SQL partial aggregate's output, which
 * the plugin's exchange marks: sql/); a shuffle of its records (through narrow one-to-one steps,
 * such as assigning partition ids) is combined.
 */
private[spark] trait CombinableRecords {
  def combineSpec: CombineSpec
}

private[spark] object Combinable {

  /**
   * How `dependency`'s records combine (on the driver, where its RDD is known): an RDD shuffle's
   * map-side combine, or the mark of the plugin's SQL exchange; None for any other shuffle.
   */
  def of(dependency: ShuffleDependency[_, _, _]): Option[CombineSpec] =
    dependency.aggregator match {
      case Some(aggregator) if dependency.mapSideCombine =>
        Some(new AggregatorCombine(aggregator.asInstanceOf[Aggregator[Any, Any, Any]]))
      case _ => RddMarks.find[CombinableRecords](dependency.rdd).map(_.combineSpec)
    }
}
