"""The reduced A/B set each supported Spark minor runs (``make test-spark-minors``): the plugin jar
of the installed pyspark loads, and RDD, SQL with AQE and a skew join give the sort shuffle's
results, aggregations combined per executor (local reduction) among them. Deselected from the
full suite (``-m "not spark_minor"``), which covers all of it."""

import pytest
from ab_conf import SQL_AQE_CONF
from test_rdd_ab import jvm_reduce_by_key, rdd_join, reduce_by_key
from test_sql_ab import aggregate_functions, group_by, skew_join

import pyspark_shuffle
from pyspark_shuffle import _jars
from pyspark_shuffle.testing import ShuffleComparison

pytestmark = [pytest.mark.integration, pytest.mark.spark_minor]

#: One plugin variant: mode=push with local reduction runs every path that differs between minors
#: (the manager and resolver it serves through, the SQL exchange, Spark's internal calls); the
#: full suite runs the others on the full minor.
ab = ShuffleComparison(conf=SQL_AQE_CONF, variants={"push": {"mode": "push"}})


# The full suite's own workloads (test_rdd_ab, test_sql_ab), compared here on this minor.
for workload in (reduce_by_key, rdd_join, group_by, aggregate_functions):
    ab.workload(workload, unordered=True)
ab.workload(skew_join)
ab.workload(jvm_reduce_by_key)


def test_the_jar_of_the_installed_minor_is_chosen():
    version = _jars.installed_pyspark_version()
    name = _jars.parse_jar_name(pyspark_shuffle.jar_path())
    assert name.spark_minor == _jars.spark_minor(version)


@pytest.mark.parametrize(
    "name", ["reduce_by_key", "rdd_join", "group_by", "aggregate_functions", "jvm_reduce_by_key"]
)
def test_same_result(name):
    assert ab.assert_same(name)


def test_aggregations_are_combined():
    for variant, side in ab.run().plugins.items():
        combine = side.metrics["application"]["combine"]
        assert combine["segments_read"] > 0 and combine["rows_out"] < combine["rows_in"], (variant, combine)


def test_skew_join_is_split_and_equal():
    result = ab.run()
    _, split = result.assert_same("skew_join")
    assert split, "AQE did not split the skewed join: the test would not cover map ranges"
    for side in result.plugins.values():
        assert side.manager_class.endswith("AdaptiveShuffleManager")
