"""The pytest plugin's session-scoped fixture really runs the plugin's shuffle manager."""

from operator import add

import pytest

from pyspark_shuffle._jvm import SHUFFLE_MANAGER_CLASS, active_shuffle_manager_class

pytestmark = pytest.mark.integration


def test_fixture_runs_the_plugin(pyspark_shuffle_spark):
    spark = pyspark_shuffle_spark
    assert active_shuffle_manager_class(spark) == SHUFFLE_MANAGER_CLASS
    assert spark.sparkContext.master.startswith("local-cluster")
    counts = spark.sparkContext.parallelize(range(3000), 3).map(lambda x: (x % 10, 1)).reduceByKey(add, 4)
    assert sorted(counts.collect()) == [(k, 300) for k in range(10)]
