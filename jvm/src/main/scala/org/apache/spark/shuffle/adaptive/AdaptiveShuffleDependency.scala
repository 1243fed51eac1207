package org.apache.spark.shuffle.adaptive

import scala.reflect.ClassTag

import org.apache.spark.{Partitioner, ShuffleDependency}
import org.apache.spark.rdd.RDD
import org.apache.spark.serializer.Serializer
import org.apache.spark.shuffle.ShuffleWriteProcessor
import org.apache.spark.shuffle.adaptive.combine.CombineSpec

/**
 * The shuffle of one of the plugin's Spark SQL exchanges (sql/), with what the shuffle manager
 * reads of it when the shuffle is registered ([[DriverServices.handle]]) and a plain dependency
 * does not say: how its records combine (local reduction), whether its reduce tasks run at their
 * partitions' owners (mode=push), and the shuffles one reduce task reads together with it (the
 * sides of a join, which then get the same owners).
 *
 * Spark registers a dependency from its constructor; these are the subclass's constructor
 * parameters, which Scala stores before it calls that constructor, so registration sees them.
 *
 * @param combine         how its records combine, where they do
 * @param reducedAtOwners its reduce tasks prefer their partitions' owners, so a block pushed there
 *                        crosses the network once, as in the sort shuffle
 * @param coPartitionKey  shuffles of one key are read partition by partition by the same tasks
 */
private[spark] final class AdaptiveShuffleDependency[K: ClassTag, V: ClassTag, C: ClassTag](
    rdd: RDD[_ <: Product2[K, V]],
    partitioner: Partitioner,
    serializer: Serializer,
    writeProcessor: ShuffleWriteProcessor,
    val combine: Option[CombineSpec],
    val reducedAtOwners: Boolean,
    val coPartitionKey: Option[Long])
    extends ShuffleDependency[K, V, C](
      rdd,
      partitioner,
      serializer,
      shuffleWriterProcessor = writeProcessor)
