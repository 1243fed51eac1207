"""pyspark_shuffle.metrics(spark) on the plugin's local-cluster session (two executors).

Spark's own shuffle-read bytes come from the driver's AppStatusStore, the store Spark's REST API
(``/api/v1/applications/<id>/stages``) serves; the shared session runs without a UI, so the
test reads the store through py4j rather than over HTTP.
"""

import time

import pytest
from status_store import stage_totals

import pyspark_shuffle
from pyspark_shuffle import DummyRDD
from pyspark_shuffle._jvm import SHUFFLE_MANAGER_CLASS
from pyspark_shuffle._metrics import COUNTER_NAMES, total_bytes

pytestmark = pytest.mark.integration

SIZE, PARTITION = 2 << 20, 64 << 10  # 32 map and 32 reduce tasks


@pytest.fixture(scope="module")
def spark(pyspark_shuffle_spark):
    return pyspark_shuffle_spark


def executor_ids(spark):
    """Ids of the live executors, from Spark's status store (the REST API's /executors)."""
    executors = spark.sparkContext._jsc.sc().statusStore().executorList(True)
    return {str(executors.apply(i).id()) for i in range(executors.size())} - {"driver"}


def wait_for_executors(spark, count, timeout=120.0):
    """Block until ``count`` executors are registered (a condition, with a deadline): map
    outputs must land on both executors for reducers to read local and remote blocks."""
    deadline = time.monotonic() + timeout
    while len(spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()) < count + 1:
        if time.monotonic() > deadline:
            raise AssertionError(f"fewer than {count} executors registered after {timeout} s")
        time.sleep(0.2)


@pytest.fixture(scope="module")
def dummy_job(spark):
    """Counters and Spark's shuffle-read bytes before and after one DummyRDD shuffle."""
    wait_for_executors(spark, 2)
    before = pyspark_shuffle.metrics(spark)  # also drains the listener bus
    spark_before = stage_totals(spark, "shuffleReadBytes")
    result = DummyRDD(spark, size=SIZE, skew=1.0, partition_size=PARTITION, seed=4).run()
    after = pyspark_shuffle.metrics(spark)
    spark_after = stage_totals(spark, "shuffleReadBytes")
    return before, after, spark_after - spark_before, result


def delta(before, after, name):
    old, new = before["application"].get(name, {}), after["application"][name]
    if isinstance(new, dict):
        return {k: v - old.get(k, 0) for k, v in new.items() if v - old.get(k, 0)}
    return new - (old or 0)


def test_counters_present(dummy_job):
    _, after, _, _ = dummy_job
    assert after["manager"] == SHUFFLE_MANAGER_CLASS
    assert set(after) == {
        "manager",
        "application",
        "since_mark",
        "executors",
        "combine",
        "push",
        "losses",
        "cpu",
    }
    assert after["since_mark"] == {}  # nothing marked
    assert after["push"] == {} and after["losses"] == {}  # mode="pull"
    assert set(after["application"]) == set(COUNTER_NAMES)
    assert after["application"]["reduce_tasks"] > 0
    for counters in after["executors"].values():
        assert set(counters) == set(COUNTER_NAMES)


def test_cpu_of_the_shuffles_stages(spark, dummy_job):
    before, after, _, result = dummy_job
    (shuffle,) = set(after["cpu"]) - set(before["cpu"])
    cpu = after["cpu"][shuffle]
    assert cpu["map"]["tasks"] == cpu["reduce"]["tasks"] == result["num_partitions"]
    assert stage_totals(spark, "executorCpuTime") / 1e9 >= cpu["map"]["executor_cpu_s"] > 0
    assert cpu["reduce"]["executor_cpu_s"] > 0 and cpu["map"]["executor_run_s"] > 0


def test_one_fetcher_per_reduce_task(dummy_job):
    before, after, _, result = dummy_job
    assert delta(before, after, "reduce_tasks") == result["num_partitions"] == 32


def test_local_and_remote_blocks_from_both_executors(spark, dummy_job):
    before, after, _, _ = dummy_job
    by_transport = delta(before, after, "bytes_by_transport")
    # Spark turns host-local reads off on local-cluster unless they are set, so the other
    # executor's blocks cross the network.
    assert set(by_transport) == {"local", "netty"}, by_transport
    assert set(delta(before, after, "requests_by_transport")) == {"netty"}
    assert all(v > 0 for v in by_transport.values())
    by_source = delta(before, after, "bytes_by_source")
    executors = executor_ids(spark)
    assert len(executors) == 2 and set(by_source) == executors, (by_source, executors)
    assert sum(by_source.values()) == sum(by_transport.values())
    blocks = delta(before, after, "blocks_by_transport")
    assert sum(blocks.values()) == sum(delta(before, after, "blocks_by_source").values()) > 0
    assert after["application"]["requests"] > 0 and after["application"]["blocks_per_request"] >= 1.0
    assert after["application"]["peak_bytes_in_flight"] > 0
    assert after["application"]["corrupt_refetches"] == 0


def test_executors_add_up_to_the_application(dummy_job):
    _, after, _, _ = dummy_job
    executors = after["executors"].values()
    application = after["application"]
    assert sum(c["reduce_tasks"] for c in executors) == application["reduce_tasks"]
    assert sum(total_bytes(c) for c in executors) == total_bytes(application)
    assert sum(c["requests"] for c in executors) == application["requests"]
    assert max(c["peak_bytes_in_flight"] for c in executors) == application["peak_bytes_in_flight"]


def test_plugin_bytes_equal_spark_shuffle_read_bytes(dummy_job):
    before, after, spark_read, result = dummy_job
    plugin_read = total_bytes(after["application"]) - total_bytes(before["application"])
    assert spark_read > 0
    assert plugin_read == spark_read
    # Blocks carry the payloads plus serialization framing, never less than the payloads.
    assert plugin_read >= sum(result["destination_bytes"]) == SIZE


def test_metrics_frame_equals_the_counters(spark, dummy_job):
    frame = pyspark_shuffle.metrics_frame(spark)
    counters = pyspark_shuffle.metrics(spark)
    assert list(frame["scope"]) == ["application", *sorted(counters["executors"])]
    application = frame.iloc[0]
    assert application["reduce_tasks"] == counters["application"]["reduce_tasks"]
    for source, value in counters["application"]["bytes_by_source"].items():
        assert application[f"bytes_by_source.{source}"] == value
