"""The benchmark workloads, run inside the child's Spark application.

Each takes the SparkSession and a job dict (see :mod:`pyspark_shuffle.bench.runner`) and returns
a small, manager-independent summary of its result (row counts and a checksum), so runs of the
same workload, skew and seed can be checked equal across managers. Data is generated in the
JVM from the seed (no Python rows), the same for every run.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Dict

from ..dummy import DummyRDD, keyed_rows, keyed_sums, skewed_dimension, skewed_fact
from .config import KEYED_ROW_BYTES, ROW_OVERHEAD_BYTES


def fact_rows(size_bytes: int, payload_bytes: int) -> int:
    """Rows of the fact table that make about ``size_bytes`` of shuffle data."""
    return max(1, size_bytes // (payload_bytes + ROW_OVERHEAD_BYTES))


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def dummy(spark: Any, job: Dict[str, Any]) -> Dict[str, Any]:
    """The DummyRDD shuffle: ``size`` bytes in chunks, each to a Zipf(skew)-drawn destination;
    its tasks pinned with ``pin_hot`` (see :meth:`DummyRDD.run`)."""
    pin_hot = job.get("pin_hot")
    out = DummyRDD(
        spark,
        size=job["size_bytes"],
        skew=float(job["skew"]),
        partition_size=job["partition_bytes"],
        seed=job["seed"],
        compressible=bool(job["compressible"]),
    ).run(pin_executors=job["executors"] if pin_hot else 0, hot_executor=pin_hot or 1)
    received = out["destination_bytes"]
    return {
        "partitions": out["num_partitions"],
        "bytes": sum(received),
        "max_destination_bytes": max(received),
        "checksum": _digest([received, out["destination_chunks"]]),
    }


def _fact(spark: Any, job: Dict[str, Any]) -> Any:
    rows = fact_rows(job["size_bytes"], job["payload_bytes"])
    fact = skewed_fact(
        spark, rows, job["keys"], float(job["skew"]), job["payload_bytes"], job["num_partitions"], job["seed"]
    )
    return fact, rows


def join(spark: Any, job: Dict[str, Any]) -> Dict[str, Any]:
    """Fact (Zipf keys) joined with the dimension on key, a sort-merge join (broadcast is off):
    both sides shuffled by key; counted, with an order-independent checksum of the joined rows."""
    from pyspark.sql import functions as F

    fact, rows = _fact(spark, job)
    dimension = skewed_dimension(spark, job["keys"], job["num_partitions"])
    result = (
        fact.join(dimension, "key")
        .agg(
            F.count(F.lit(1)).alias("rows"),
            F.bit_xor(F.xxhash64("id", "key", "payload", "name")).alias("checksum"),
        )
        .collect()[0]
    )
    return {
        "fact_rows": rows,
        "rows": int(result["rows"]),
        "checksum": f"{int(result['checksum'] or 0) & (2**64 - 1):016x}",
    }


def groupby(spark: Any, job: Dict[str, Any]) -> Dict[str, Any]:
    """Fact shuffled by key (every row: a partial aggregate would shrink the skew away), then
    grouped by key with a count and a checksum of the payloads; the groups are collected."""
    from pyspark.sql import functions as F

    fact, rows = _fact(spark, job)
    groups = (
        fact.repartition(job["num_partitions"], "key")
        .groupBy("key")
        .agg(F.count(F.lit(1)).alias("rows"), F.bit_xor(F.xxhash64("id", "payload")).alias("hash"))
        .collect()
    )
    summary = sorted((int(g["key"]), int(g["rows"]), int(g["hash"])) for g in groups)
    return {
        "fact_rows": rows,
        "groups": len(summary),
        "max_group_rows": max((g[1] for g in summary), default=0),
        "checksum": _digest(summary),
    }


#: Rounds of SHA-256 each row's payload goes through on slowreduce's reduce side.
SLOW_REDUCE_ROUNDS = 16


def slowreduce(spark: Any, job: Dict[str, Any]) -> Dict[str, Any]:
    """Fact shuffled by key, then each row's payload hashed :data:`SLOW_REDUCE_ROUNDS` times on
    the reduce side before it is grouped: reduce tasks consume slower than the network delivers,
    so what they fetched sits in memory (the workload of the fetch budget's measurements; run it
    with several task slots per executor and large blocks, host-local reads off)."""
    from pyspark.sql import functions as F

    fact, rows = _fact(spark, job)
    digest = F.col("payload")
    for _ in range(SLOW_REDUCE_ROUNDS):
        digest = F.sha2(digest, 256)
    groups = (
        fact.repartition(job["num_partitions"], "key")
        .select("key", F.xxhash64(digest).alias("digest"))
        .groupBy("key")
        .agg(F.count(F.lit(1)).alias("rows"), F.bit_xor("digest").alias("hash"))
        .collect()
    )
    summary = sorted((int(g["key"]), int(g["rows"]), int(g["hash"])) for g in groups)
    return {"fact_rows": rows, "groups": len(summary), "checksum": _digest(summary)}


def _summary(df: Any) -> Dict[str, Any]:
    rows = sorted(tuple(str(v) for v in r) for r in df.collect())
    return {"rows": len(rows), "checksum": _digest(rows)}


def sql(spark: Any, job: Dict[str, Any]) -> Dict[str, Any]:
    """A star-schema query set with AQE on (see :data:`WORKLOAD_CONF`): the fact table (Zipf
    keys), its key dimension and a region dimension (key mod 100), joined by sort-merge joins
    and aggregated, five queries each with two to four exchanges over 200 shuffle partitions
    that AQE coalesces: many small shuffles, as analytical SQL makes. Each query's rows are
    collected and summarised."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    fact, rows = _fact(spark, job)
    fact = fact.withColumn("region", F.col("key") % 100)
    names = skewed_dimension(spark, job["keys"], 2)
    regions = spark.range(0, 100, 1, 1).select(
        F.col("id").alias("region"), F.concat(F.lit("region-"), F.col("id")).alias("region_name")
    )
    payload_hash = F.bit_xor(F.xxhash64("id", "payload"))
    queries = {
        "rows_per_name": fact.join(names, "key").groupBy("name").agg(F.count(F.lit(1)), payload_hash),
        "rows_per_region": fact.join(names, "key")
        .join(regions, "region")
        .groupBy("region_name")
        .agg(F.count(F.lit(1)), F.countDistinct("key")),
        "ids_per_region": fact.groupBy("region").agg(F.countDistinct(F.col("id") % 1000), F.max("id")),
        "top_keys_per_region": fact.groupBy("region", "key")
        .agg(F.count(F.lit(1)).alias("n"))
        .withColumn("rank", F.row_number().over(Window.partitionBy("region").orderBy(F.desc("n"), "key")))
        .where("rank <= 3"),
        "heavy_names": fact.groupBy("key")
        .agg(F.count(F.lit(1)).alias("n"))
        .join(names, "key")
        .where(F.col("n") > rows // max(1, job["keys"]))
        .select("name", "n"),
    }
    return {"fact_rows": rows, **{name: _summary(df) for name, df in queries.items()}}


#: Partitions of the coalesced workload's shuffle: above 2000, Spark's map statuses are the
#: highly compressed kind, and AQE coalesces them into a few tasks that each read a range.
COALESCED_PARTITIONS = 2100


def coalesced(spark: Any, job: Dict[str, Any]) -> Dict[str, Any]:
    """The fact table grouped by key into 2100 shuffle partitions that AQE coalesces into a few
    reduce tasks, each reading a contiguous range of partitions of every map output (Spark's
    batch fetch case)."""
    from pyspark.sql import functions as F

    fact, rows = _fact(spark, job)
    groups = fact.groupBy("key").agg(F.count(F.lit(1)).alias("rows"), F.bit_xor(F.xxhash64("id", "payload")))
    return {"fact_rows": rows, **_summary(groups)}


def keyed_rows_of(job: Dict[str, Any]) -> int:
    """Rows of the aggregation workloads' table: ``size`` at :data:`KEYED_ROW_BYTES` a row."""
    return max(1, job["size_bytes"] // KEYED_ROW_BYTES)


def aggregate(spark: Any, job: Dict[str, Any]) -> Dict[str, Any]:
    """A SQL group-by with sum, count and avg over ``keys`` distinct keys (:func:`keyed_rows`,
    one map task per partition of ``partition_size``): every key in every map task while a task
    has more rows than there are keys (local reduction's best case), every key distinct once
    there are as many keys as rows (its worst). Summarized by group count and sums."""
    from pyspark.sql import functions as F

    table = keyed_rows(spark, keyed_rows_of(job), job["keys"], job["num_partitions"], job["seed"])
    groups = table.groupBy("key").agg(
        F.sum("value").alias("sum"), F.count(F.lit(1)).alias("rows"), F.avg("value").alias("mean")
    )
    totals = groups.agg(
        F.count(F.lit(1)).alias("groups"),
        F.sum("rows").alias("rows"),
        F.bit_xor(F.xxhash64("key", "sum", "rows", F.round("mean", 3))).alias("checksum"),
    ).collect()[0]
    return {
        "groups": int(totals["groups"]),
        "rows": int(totals["rows"] or 0),
        "checksum": f"{int(totals['checksum'] or 0) & (2**64 - 1):016x}",
    }


def reducebykey(spark: Any, job: Dict[str, Any]) -> Dict[str, Any]:
    """The same rows as :func:`aggregate` summed by key with a JVM RDD's ``reduceByKey`` (an RDD
    shuffle with map-side combine) into as many reduce partitions as map tasks."""
    sums = keyed_sums(
        spark, keyed_rows_of(job), job["keys"], job["num_partitions"], job["num_partitions"], job["seed"]
    )
    return {"groups": sums["keys"], "checksum": f"{sums['checksum'] & (2**64 - 1):016x}"}


WORKLOADS: Dict[str, Callable[[Any, Dict[str, Any]], Dict[str, Any]]] = {
    "dummy": dummy,
    "join": join,
    "groupby": groupby,
    "sql": sql,
    "coalesced": coalesced,
    "aggregate": aggregate,
    "reducebykey": reducebykey,
    "slowreduce": slowreduce,
}

#: Spark settings of one workload's runs, over the harness's (``--conf`` still overrides them):
#: the SQL workloads run as analytical SQL does, with AQE.
WORKLOAD_CONF: Dict[str, Dict[str, str]] = {
    "sql": {"spark.sql.adaptive.enabled": "true", "spark.sql.shuffle.partitions": "200"},
    "coalesced": {
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.shuffle.partitions": str(COALESCED_PARTITIONS),
    },
    "aggregate": {"spark.sql.adaptive.enabled": "true", "spark.sql.shuffle.partitions": "200"},
}
