package org.apache.spark.shuffle.adaptive.lineage

import scala.annotation.tailrec
import scala.reflect.ClassTag

import org.apache.spark.OneToOneDependency
import org.apache.spark.rdd.RDD

/**
 * What the plugin's SQL exchange says of a shuffle to the shuffle manager, which sees only the
 * shuffle's dependency: it marks the RDD its rows come from, and the manager finds the mark
 * through the narrow one-to-one steps between that RDD and the shuffle's records (such as
 * assigning partition ids).
 */
private[spark] object RddMarks {

  /** One-to-one steps between a shuffle's records and the marked RDD that makes them. */
  private val MaxSteps = 3

  /** The mark of type `T` on `rdd` or on the RDD it is one-to-one of, if any. */
  def find[T: ClassTag](rdd: RDD[_]): Option[T] = find(rdd, MaxSteps)

  @tailrec
  private def find[T: ClassTag](rdd: RDD[_], steps: Int): Option[T] = rdd match {
    case marked: T => Some(marked)
    case _ if steps > 0 =>
      rdd.dependencies match {
        case Seq(narrow: OneToOneDependency[_]) => find(narrow.rdd, steps - 1)
        case _ => None
      }
    case _ => None
  }
}
