"""Spark SQL with AQE A/B: Spark's sort shuffle vs the plugin on local-cluster[2,1,1024]."""

import pytest
from ab_conf import LOCAL_AB, SQL_AQE_CONF

pytestmark = pytest.mark.integration

ab = LOCAL_AB


def executed_plan(df):
    return df._jdf.queryExecution().executedPlan().toString()


def rows(df):
    return [tuple(r) for r in df.collect()]


@ab.workload(unordered=True)
def group_by(spark):
    from pyspark.sql import functions as F

    df = spark.range(0, 50000, 1, 4).groupBy((F.col("id") % 113).alias("k"))
    return rows(df.agg(F.count("*"), F.sum("id"), F.min("id"), F.max("id")))


def typed_table(spark, partitions=8):
    from pyspark.sql import functions as F

    return spark.range(0, 40000, 1, partitions).select(
        (F.col("id") % 61).alias("k"),
        F.col("id"),
        (F.col("id") % 13).cast("double").alias("d"),
        F.concat(F.lit("s"), (F.col("id") % 17).cast("string")).alias("s"),
        (F.col("id") % 7).cast("decimal(30,2)").alias("dec"),
    )


@ab.workload(unordered=True)
def aggregate_functions(spark):
    # Every key in every map task: local reduction merges each function's partial buffers.
    from pyspark.sql import functions as F

    df = typed_table(spark).groupBy("k")
    return rows(
        df.agg(
            F.sum("id"),
            F.count("*"),
            F.min("s"),
            F.max("dec"),
            F.avg("dec"),
            F.round(F.stddev("d"), 6),
            F.approx_count_distinct("id"),
            F.sort_array(F.collect_set("s")),
            F.percentile("id", 0.5),
            F.bit_xor("id"),
            F.max_by("d", "id"),
            F.count_distinct("s"),
        )
    )


@ab.workload(unordered=True)
def keys_of_every_kind(spark):
    from pyspark.sql import functions as F

    df = typed_table(spark).select(
        F.when(F.col("k") % 5 == 0, None).otherwise(F.col("s")).alias("ks"),
        "dec",
        F.struct(F.col("k") % 3, "s").alias("st"),
        F.when(F.col("k") % 4 == 0, float("nan")).otherwise(F.col("d")).alias("kd"),
        "id",
    )
    grouped = df.groupBy("ks", "dec", "st", "kd").agg(F.sum("id"), F.count("*"))
    # NaN is a key of its own; in Python no NaN equals another, so it is compared as text.
    return rows(grouped.withColumn("kd", F.col("kd").cast("string")))


@ab.workload(unordered=True)
def cached_input(spark):
    from pyspark.sql import functions as F

    cached = typed_table(spark).cache()
    try:
        return rows(cached.groupBy("s").agg(F.sum("id"), F.min("d")))
    finally:
        cached.unpersist()


@ab.workload(unordered=True)
def sql_join(spark):
    from pyspark.sql import functions as F

    left = spark.range(0, 20000, 1, 4).withColumn("k", F.col("id") % 500)
    right = spark.range(0, 1000, 1, 2).select((F.col("id") % 500).alias("k"), (F.col("id") * 3).alias("w"))
    joined = left.join(right, "k").groupBy("k").agg(F.count("*"), F.sum("w"), F.sum("id"))
    return rows(joined)


@ab.workload(unordered=True)
def window(spark):
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spec = Window.partitionBy("k").orderBy(F.col("id").desc())
    df = spark.range(0, 30000, 1, 4).withColumn("k", F.col("id") % 37)
    ranked = df.withColumn("rn", F.row_number().over(spec)).withColumn(
        "total", F.sum("id").over(Window.partitionBy("k"))
    )
    return rows(ranked.where("rn <= 3"))


@ab.workload
def skew_join(spark):
    from pyspark.sql import functions as F

    # 90% of the left rows have key 0; several map tasks so AQE can split by map ranges.
    left = spark.range(0, 200000, 1, 8).select(
        F.when(F.col("id") % 10 != 0, F.lit(0)).otherwise(F.col("id") % 1000).alias("k"),
        F.col("id").alias("v"),
    )
    right = spark.range(0, 1000, 1, 2).select(F.col("id").alias("k"), (F.col("id") + 1).alias("w"))
    joined = left.join(right, "k")
    df = joined.groupBy((F.col("k") % 7).alias("g")).agg(F.count("*"), F.sum("v"), F.sum("w"))
    result = sorted(rows(df))
    plan = executed_plan(df)
    return result, "skew=true" in plan or "isSkewJoin=true" in plan


@ab.workload(unordered=True)
def many_reduce_partitions(spark):
    from pyspark.sql import functions as F

    # 2100 > 2000 reduce partitions: map outputs are HighlyCompressedMapStatus; AQE coalesces
    # them into a few reduce tasks that each read a contiguous range of partitions.
    spark.conf.set("spark.sql.shuffle.partitions", "2100")
    try:
        df = (
            spark.range(0, 20000, 1, 2)
            .groupBy((F.col("id") % 3000).alias("k"))
            .agg(F.count("*"), F.sum("id"))
        )
        result = rows(df)
        plan = executed_plan(df)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", SQL_AQE_CONF["spark.sql.shuffle.partitions"])
    assert "2100" in plan, plan
    return result


@pytest.mark.parametrize(
    "name", ["group_by", "sql_join", "window", "aggregate_functions", "keys_of_every_kind", "cached_input"]
)
def test_same_result(name):
    assert ab.assert_same(name)


def test_group_by_values():
    result = {k: (n, s) for k, n, s, _, _ in ab.assert_same("group_by")}
    assert result[5] == (len(range(5, 50000, 113)), sum(range(5, 50000, 113)))


def test_skew_join_split_under_both_managers():
    result = ab.run()
    for side in (result.sort, *result.plugins.values()):
        _, split = side.value("skew_join")
        assert split, f"AQE did not split the skewed join under {side.manager_class}"
    rows_, _ = ab.assert_same("skew_join")
    assert sum(n for _, n, _, _ in rows_) == 200000


def test_many_reduce_partitions():
    result = dict((k, (n, s)) for k, n, s in ab.assert_same("many_reduce_partitions"))
    assert len(result) == 3000 and sum(n for n, _ in result.values()) == 20000
