package org.apache.spark.shuffle.adaptive.dummy

/**
 * The shape of a DummyRDD (DSA w/ SMS paper, section 4.1): `totalBytes` S cut into
 * n = ceil(S / P) partitions of `partitionBytes` P (the last one holds the remainder); each
 * partition is cut into n chunks of about P / n bytes, and every chunk is sent to one
 * destination partition drawn from [[ZipfDestinations]] with the given skew.
 */
private[spark] final case class DummySpec(
    totalBytes: Long,
    partitionBytes: Long,
    skew: Double,
    seed: Long,
    compressible: Boolean) {

  require(totalBytes > 0, s"size must be positive, got $totalBytes bytes")
  require(partitionBytes > 0, s"partition size must be positive, got $partitionBytes bytes")
  require(
    partitionBytes <= totalBytes,
    s"partition size ($partitionBytes bytes) must not exceed size ($totalBytes bytes)")
  require(
    skew >= 0 && !skew.isInfinite && !skew.isNaN,
    s"skew must be a finite number >= 0, got $skew")

  val numPartitions: Int = {
    val n = (totalBytes + partitionBytes - 1) / partitionBytes
    require(
      n <= Int.MaxValue,
      s"size / partition size gives $n partitions, more than Spark supports")
    n.toInt
  }

  /** The smallest partition: the last, holding what the full ones leave. */
  private val lastPartitionBytes = totalBytes - (numPartitions - 1L) * partitionBytes
  require(
    lastPartitionBytes >= numPartitions && partitionBytes / numPartitions <= Int.MaxValue,
    s"size $totalBytes with partition size $partitionBytes gives $numPartitions partitions, and " +
      s"the last ($lastPartitionBytes bytes) cannot be cut into $numPartitions chunks of at least " +
      "one byte (and each chunk must stay below 2 GiB): use a larger size or partition size")

  def partitionSize(index: Int): Long =
    if (index == numPartitions - 1) lastPartitionBytes else partitionBytes

  /** Chunk sizes of one partition: n nearly equal parts, the remainder spread over the first. */
  def chunkSizes(index: Int): Array[Int] = {
    val bytes = partitionSize(index)
    val base = bytes / numPartitions
    val extra = bytes % numPartitions
    Array.tabulate(numPartitions)(j => (base + (if (j < extra) 1 else 0)).toInt)
  }

  def destinations: ZipfDestinations = new ZipfDestinations(numPartitions, skew)
}
