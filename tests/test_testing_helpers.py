"""JVM-free parts of pyspark_shuffle.testing."""

import pytest
from pyspark.sql import Row

from pyspark_shuffle._jvm import SHUFFLE_MANAGER_CLASS, SORT_SHUFFLE_MANAGER_CLASS
from pyspark_shuffle.sessions import base_conf
from pyspark_shuffle.testing import (
    ShuffleComparison,
    difference,
    parse_conf_env,
    resolve_master,
    session_conf,
)


def test_parse_conf_env():
    assert parse_conf_env(" a.b=1, c=x=y ,") == {"a.b": "1", "c": "x=y"}
    assert parse_conf_env(None) == {}
    with pytest.raises(ValueError, match="PYSPARK_SHUFFLE_TEST_CONF.*'oops'"):
        parse_conf_env("a=1,oops")


def test_master_override():
    assert resolve_master({}) == "local-cluster[2,1,1024]"
    assert resolve_master({"PYSPARK_SHUFFLE_TEST_MASTER": "local[2]"}) == "local[2]"


def test_local_cluster_sessions_wait_for_every_executor():
    waits = base_conf("local-cluster[3,2,1024]")
    assert waits["spark.cores.max"] == "6"
    assert waits["spark.scheduler.minRegisteredResourcesRatio"] == "1.0"
    for master in ("local[2]", "spark://10.231.0.1:7077"):
        assert "spark.cores.max" not in base_conf(master)


def test_session_confs_differ_only_in_manager():
    env = {"PYSPARK_SHUFFLE_TEST_CONF": "spark.x=1"}
    plugin = session_conf(
        "plugin", {"spark.reducer.maxSizeInFlight": "1m"}, {"in_flight_increment": "256k"}, env
    )
    sort = session_conf("sort", {"spark.reducer.maxSizeInFlight": "1m"}, {"in_flight_increment": "256k"}, env)
    assert plugin.pop("spark.shuffle.manager") == SHUFFLE_MANAGER_CLASS
    assert sort.pop("spark.shuffle.manager") == SORT_SHUFFLE_MANAGER_CLASS
    assert plugin == sort and plugin["spark.x"] == "1" and "pyspark-shuffle" in plugin["spark.jars"]
    with pytest.raises(ValueError, match="manager"):
        session_conf("tungsten")


def test_difference():
    assert difference([Row(a=1), Row(a=2)], [(2,), (1,)], unordered=True) is None
    assert "missing" in difference([1, 2, 2], [1, 2, 3], unordered=True)
    assert difference([1, 2], [2, 1]) == "first difference at index 0: 1 != 2 (lengths 2, 2)"
    assert difference({"k": [1]}, {"k": [1]}) is None
    assert difference([1], [1, 2]) == "lengths differ: 1 != 2"


def test_workload_registration():
    ab = ShuffleComparison()
    ab.workload(lambda spark: 1, name="one")
    with pytest.raises(ValueError, match="twice"):
        ab.workload(lambda spark: 2, name="one")
    assert ab.names == ["one"]


def test_extend_with_some_workloads_of_another_comparison():
    local = ShuffleComparison()
    local.workload(lambda spark: 1, name="one")
    local.workload(lambda spark: 2, name="two", unordered=True)
    local.workload(lambda spark: 3, name="three")
    cluster = ShuffleComparison()
    cluster.extend(local, names=("three", "two"))
    assert cluster.names == ["two", "three"]  # in the order they were registered
    assert cluster._unordered == {"two": True, "three": False}
    everything = ShuffleComparison()
    everything.extend(local, prefix="c_")
    assert everything.names == ["c_one", "c_two", "c_three"]
    with pytest.raises(ValueError, match="four"):
        ShuffleComparison().extend(local, names=("one", "four"))


def test_sort_side_on_a_slowed_executor_keeps_the_delay():
    from pyspark_shuffle._jvm import (
        SLOW_SERVING_SHUFFLE_MANAGER_CLASS,
        SLOW_SERVING_SORT_SHUFFLE_MANAGER_CLASS,
    )

    delayed = {"spark.shuffle.adaptive.testing.serveDelay": "1:20"}
    sort = session_conf("sort", delayed, {}, {})
    plugin = session_conf("plugin", delayed, {}, {})
    assert sort["spark.shuffle.manager"] == SLOW_SERVING_SORT_SHUFFLE_MANAGER_CLASS
    assert plugin["spark.shuffle.manager"] == SLOW_SERVING_SHUFFLE_MANAGER_CLASS
    assert sort["spark.shuffle.adaptive.testing.serveDelay"] == "1:20"
    delayed_by_conf = session_conf("sort", {"spark.shuffle.adaptive.testing.serveDelay": "0:5"}, {}, {})
    assert delayed_by_conf["spark.shuffle.manager"] == SLOW_SERVING_SORT_SHUFFLE_MANAGER_CLASS
