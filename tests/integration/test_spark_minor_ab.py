"""The reduced A/B set each supported Spark minor runs (``make test-spark-minors``): the plugin jar
of the installed pyspark loads, and RDD, SQL with AQE and a skew join give the sort shuffle's
results. Deselected from the full suite (``-m "not spark_minor"``), which covers all of it."""

from operator import add

import pytest
from ab_conf import SQL_AQE_CONF

import pyspark_shuffle
from pyspark_shuffle import _jars
from pyspark_shuffle.testing import ShuffleComparison

pytestmark = [pytest.mark.integration, pytest.mark.spark_minor]

ab = ShuffleComparison(conf=SQL_AQE_CONF, variants={"adaptive": {}, "push": {"mode": "push"}})


def rows(df):
    return [tuple(r) for r in df.collect()]


@ab.workload(unordered=True)
def rdd_reduce_and_join(spark):
    sc = spark.sparkContext
    sums = sc.parallelize(range(20000), 4).map(lambda x: (x % 97, x)).reduceByKey(add, 5)
    other = sc.parallelize([(i % 70, -i) for i in range(700)], 3)
    return sums.join(other, 6).collect()


@ab.workload(unordered=True)
def sql_group_by(spark):
    from pyspark.sql import functions as F

    df = spark.range(0, 50000, 1, 4).groupBy((F.col("id") % 113).alias("k"))
    return rows(df.agg(F.count("*"), F.sum("id"), F.max("id")))


@ab.workload
def skew_join(spark):
    from pyspark.sql import functions as F

    left = spark.range(0, 200000, 1, 8).select(
        F.when(F.col("id") % 10 != 0, F.lit(0)).otherwise(F.col("id") % 1000).alias("k"),
        F.col("id").alias("v"),
    )
    right = spark.range(0, 1000, 1, 2).select(F.col("id").alias("k"), (F.col("id") + 1).alias("w"))
    df = left.join(right, "k").groupBy((F.col("k") % 7).alias("g")).agg(F.count("*"), F.sum("v"))
    result = sorted(rows(df))
    plan = df._jdf.queryExecution().executedPlan().toString()  # AQE's final plan, once run
    return result, "skew=true" in plan or "isSkewJoin=true" in plan


def test_the_jar_of_the_installed_minor_is_chosen():
    version = _jars.installed_pyspark_version()
    name = _jars.parse_jar_name(pyspark_shuffle.jar_path())
    assert name.spark_minor == _jars.spark_minor(version)


@pytest.mark.parametrize("name", ["rdd_reduce_and_join", "sql_group_by"])
def test_same_result(name):
    assert ab.assert_same(name)


def test_skew_join_is_split_and_equal():
    result = ab.run()
    _, split = result.assert_same("skew_join")
    assert split, "AQE did not split the skewed join: the test would not cover map ranges"
    for side in result.plugins.values():
        assert side.manager_class.endswith("AdaptiveShuffleManager")
