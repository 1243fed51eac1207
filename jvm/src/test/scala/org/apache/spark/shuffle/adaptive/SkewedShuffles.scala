package org.apache.spark.shuffle.adaptive

import org.apache.spark.SparkContext
import org.apache.spark.rdd.{RDD, ShuffledRDD}
import org.apache.spark.shuffle.adaptive.dummy.{DestinationPartitioner, DummyRDD, DummySpec, ExecutorProbe, PinnedRDD}

/** Skewed DummyRDD shuffles whose map tasks all run on one executor, and their expected output. */
private[adaptive] object SkewedShuffles {

  def onExecutor(
      sc: SparkContext,
      spec: DummySpec,
      executorId: String): ShuffledRDD[Int, Array[Byte], Array[Byte]] =
    new ShuffledRDD[Int, Array[Byte], Array[Byte]](
      new PinnedRDD(new DummyRDD(sc, spec), ExecutorProbe.location(sc, executorId)),
      new DestinationPartitioner(spec.numPartitions))

  /** What the shuffle must deliver, from the generator itself: no shuffle involved. */
  def expected(sc: SparkContext, spec: DummySpec): Map[Int, (Long, Long)] = {
    val dummy = new DummyRDD(sc, spec)
    val partitioner = new DestinationPartitioner(spec.numPartitions)
    digest(
      dummy.partitions.iterator
        .flatMap(p => dummy.compute(p, null))
        .map(r => partitioner.getPartition(r._1) -> r))
  }

  /** Per reduce partition: records and the sum of their payloads' hashes (order-free). */
  def digest(records: Iterator[(Int, (Int, Array[Byte]))]): Map[Int, (Long, Long)] =
    records.foldLeft(Map.empty[Int, (Long, Long)]) { case (acc, (partition, (_, payload))) =>
      val (n, h) = acc.getOrElse(partition, (0L, 0L))
      acc.updated(partition, (n + 1, h + java.util.Arrays.hashCode(payload)))
    }

  def shuffledDigest(rdd: RDD[(Int, Array[Byte])]): Map[Int, (Long, Long)] =
    rdd
      .mapPartitionsWithIndex((i, it) => Iterator(digest(it.map(r => i -> r))))
      .collect()
      .foldLeft(Map.empty[Int, (Long, Long)])(_ ++ _)
}
