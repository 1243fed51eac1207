package org.apache.spark.shuffle.adaptive.dummy

import org.apache.spark.Partitioner

/** Sends a record keyed by an Int destination to exactly that partition. */
private[spark] final class DestinationPartitioner(partitions: Int) extends Partitioner {
  override def numPartitions: Int = partitions

  override def getPartition(key: Any): Int = key match {
    case x: Int if x >= 0 && x < partitions => x
    case other =>
      throw new IllegalArgumentException(
        s"destination $other is not a partition of 0 until $partitions")
  }

  override def equals(other: Any): Boolean = other match {
    case p: DestinationPartitioner => p.numPartitions == numPartitions
    case _ => false
  }

  override def hashCode(): Int = numPartitions
}
