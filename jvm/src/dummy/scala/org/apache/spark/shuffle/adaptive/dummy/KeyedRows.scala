package org.apache.spark.shuffle.adaptive.dummy

import org.apache.spark.SparkContext
import org.apache.spark.sql.{Column, DataFrame, SparkSession}
import org.apache.spark.sql.functions.{col, lit, pmod}

/**
 * Rows `0 until rows` in `partitions` with a key of `numKeys`, for aggregation workloads: row i's
 * key is `(i * Spread + seed) mod numKeys`, so every key is in every partition while a partition
 * has more rows than there are keys, and every row's key differs while there are at least as many
 * keys as rows (the spread is a prime no number of keys the workloads use is a multiple of).
 */
private[spark] object KeyedRows {

  val Spread = 1000003L

  private def key(id: Column, numKeys: Long, seed: Long): Column =
    pmod(id * lit(Spread) + lit(seed), lit(numKeys))

  /** `key BIGINT, value BIGINT` (value = the row's number). */
  def table(
      spark: SparkSession,
      rows: Long,
      numKeys: Long,
      partitions: Int,
      seed: Long): DataFrame = {
    require(numKeys > 0, s"keys must be positive, got $numKeys")
    spark
      .range(0, rows, 1, partitions)
      .select(key(col("id"), numKeys, seed).as("key"), col("id").as("value"))
  }

  /**
   * The same rows as an RDD of `(key, value)`, summed by key with `reduceByKey` into `reducers`
   * partitions: the number of keys and the sum over keys of key × sum mod 2^64 (a checksum
   * independent of the order).
   */
  def sumsByKey(
      sc: SparkContext,
      rows: Long,
      numKeys: Long,
      partitions: Int,
      reducers: Int,
      seed: Long): (Long, Long) = {
    require(numKeys > 0, s"keys must be positive, got $numKeys")
    sc.range(0, rows, 1, partitions)
      .map(id => (Math.floorMod(id * Spread + seed, numKeys), id))
      .reduceByKey(_ + _, reducers)
      .map { case (k, sum) => (1L, k * sum) }
      .fold((0L, 0L)) { case ((n1, c1), (n2, c2)) => (n1 + n2, c1 + c2) }
  }
}
