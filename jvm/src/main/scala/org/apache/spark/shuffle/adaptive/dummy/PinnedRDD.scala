package org.apache.spark.shuffle.adaptive.dummy

import scala.reflect.ClassTag

import org.apache.spark.{Partition, TaskContext}
import org.apache.spark.rdd.RDD

/**
 * `prev` with every partition preferring one executor (`executor_<host>_<id>`), so that with a
 * long `spark.locality.wait` its tasks run there and nowhere else.
 */
private[spark] final class PinnedRDD[T: ClassTag](prev: RDD[T], location: String)
    extends RDD[T](prev) {

  override protected def getPartitions: Array[Partition] = prev.partitions

  override def compute(split: Partition, context: TaskContext): Iterator[T] =
    prev.iterator(split, context)

  override protected def getPreferredLocations(split: Partition): Seq[String] = Seq(location)
}
