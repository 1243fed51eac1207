package org.apache.spark.shuffle.adaptive.dummy

import java.util.SplittableRandom

import org.apache.spark.sql.{DataFrame, Row, SparkSession}
import org.apache.spark.sql.functions.{col, concat, lit}
import org.apache.spark.sql.types.{BinaryType, LongType, StructField, StructType}

/** DataFrames for SQL skew workloads, generated in the JVM (no Python rows). */
private[spark] object SkewedTables {

  val FactSchema: StructType = StructType(
    Seq(
      StructField("id", LongType, nullable = false),
      StructField("key", LongType, nullable = false),
      StructField("payload", BinaryType, nullable = false)))

  /**
   * `rows` rows whose `key` follows Zipf(skew) over `0 until numKeys` (key 0 the most frequent),
   * with an incompressible `payload` of `payloadBytes`. The same seed gives the same table.
   */
  def fact(
      spark: SparkSession,
      rows: Long,
      numKeys: Int,
      skew: Double,
      payloadBytes: Int,
      partitions: Int,
      seed: Long): DataFrame = {
    require(rows >= 0, s"rows must be >= 0, got $rows")
    require(payloadBytes >= 0, s"payload bytes must be >= 0, got $payloadBytes")
    require(partitions > 0, s"partitions must be positive, got $partitions")
    val keys = new ZipfDestinations(numKeys, skew)
    val data =
      spark.sparkContext.range(0, rows, 1, partitions).mapPartitionsWithIndex { (index, ids) =>
        val random = new SplittableRandom(DummyRDD.partitionSeed(seed, index))
        ids.map { id =>
          val payload = new Array[Byte](payloadBytes)
          random.nextBytes(payload)
          Row(id, keys.destination(random.nextDouble()).toLong, payload)
        }
      }
    spark.createDataFrame(data, FactSchema)
  }

  /** One row per key of [[fact]]: `key` and a `name`. */
  def dimension(spark: SparkSession, numKeys: Int, partitions: Int): DataFrame = {
    require(numKeys > 0, s"keys must be positive, got $numKeys")
    spark
      .range(0, numKeys, 1, partitions)
      .select(col("id").as("key"), concat(lit("key-"), col("id").cast("string")).as("name"))
  }
}
