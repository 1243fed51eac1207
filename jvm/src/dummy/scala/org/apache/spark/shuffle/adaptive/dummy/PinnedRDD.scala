package org.apache.spark.shuffle.adaptive.dummy

import scala.reflect.ClassTag

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.rdd.RDD

/**
 * `prev` with partition i preferring the executor `locations(i % locations.size)` (each
 * `executor_<host>_<id>`), so that with a long `spark.locality.wait` its tasks run there and
 * nowhere else.
 */
private[spark] final class PinnedRDD[T: ClassTag](prev: RDD[T], locations: IndexedSeq[String])
    extends RDD[T](prev) {
  require(locations.nonEmpty, "a pinned RDD needs at least one location")

  def this(prev: RDD[T], location: String) = this(prev, IndexedSeq(location))

  override protected def getPartitions: Array[Partition] = prev.partitions

  override def compute(split: Partition, context: TaskContext): Iterator[T] =
    prev.iterator(split, context)

  override protected def getPreferredLocations(split: Partition): Seq[String] =
    Seq(locations(split.index % locations.size))
}
