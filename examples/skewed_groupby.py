"""A skewed, shuffle-heavy PySpark job that knows nothing about the plugin.

Run it with spark-submit, once as is and once with the plugin's --jars/--conf
(see spark_submit.sh), and compare the printed results and timings.
"""

import argparse
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def skewed_rows(spark, rows, keys, hot_fraction, partitions, seed=7):
    """`rows` rows of ~200 bytes; one hot key (0) holds `hot_fraction` of them."""
    payload = F.concat(*[F.sha2((F.col("id") + i).cast("string"), 256) for i in range(3)])
    return (
        spark.range(rows, numPartitions=partitions)
        .withColumn("key", F.when(F.rand(seed) < hot_fraction, F.lit(0)).otherwise(F.col("id") % keys + 1))
        .withColumn("payload", payload)
    )


def run(spark, rows, keys=1000, hot_fraction=0.8, partitions=8):
    """Shuffles every row by key, then aggregates per key; returns (rows sorted by key, seconds)."""
    df = skewed_rows(spark, rows, keys, hot_fraction, partitions)
    shuffled = df.repartition(partitions, "key")
    result = shuffled.groupBy("key").agg(
        F.count("*").alias("rows"),
        # XOR of row hashes: independent of row order, and no overflow under ANSI mode.
        F.bit_xor(F.xxhash64("payload")).alias("payload_hash"),
    )
    start = time.perf_counter()
    out = sorted(tuple(r) for r in result.collect())
    return out, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=500_000)
    args = parser.parse_args()
    spark = SparkSession.builder.appName("skewed-groupby").getOrCreate()
    manager = spark.conf.get("spark.shuffle.manager", "sort")
    out, seconds = run(spark, args.rows)
    hot = next(r for r in out if r[0] == 0)
    print(f"shuffle manager: {manager}")
    print(f"keys: {len(out)}, rows: {sum(r[1] for r in out)}, hot key rows: {hot[1]}")
    print(f"result digest: {hash(tuple(out)) & 0xFFFFFFFF:08x}")
    print(f"job time: {seconds:.1f} s")
    spark.stop()


if __name__ == "__main__":
    main()
