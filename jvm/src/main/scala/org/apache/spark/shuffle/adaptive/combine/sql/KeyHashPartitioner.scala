package org.apache.spark.shuffle.adaptive.combine.sql

import org.apache.spark.Partitioner

/**
 * The partitioner of a combining exchange's shuffle, whose records are keyed by the hash of their
 * grouping keys (the hash of Spark's hash partitioning): a record's partition is that hash modulo
 * the partitions, non-negative, as `HashPartitioning.partitionIdExpression` computes it, and the
 * fold probes with the hash itself, so that a row is hashed once.
 */
private[spark] final class KeyHashPartitioner(override val numPartitions: Int) extends Partitioner {

  override def getPartition(key: Any): Int = {
    val r = key.asInstanceOf[Int] % numPartitions
    if (r < 0) (r + numPartitions) % numPartitions else r
  }

  override def equals(other: Any): Boolean = other match {
    case p: KeyHashPartitioner => p.numPartitions == numPartitions
    case _ => false
  }

  override def hashCode: Int = numPartitions
}
