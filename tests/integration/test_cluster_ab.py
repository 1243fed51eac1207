"""The A/B equality suite on a multi-host cluster: Spark standalone, 3 workers in network
namespaces with rate-limited links (the ``pyspark_shuffle_cluster`` fixture; skipped, with the
reason, without the privileges to create namespaces). make test compares the shapes of
``CLUSTER_SHAPES``; test_cluster_ab_all the rest of the local A/B's (make test-all)."""

import pytest
import test_rdd_ab  # noqa: F401  (registers its workloads in LOCAL_AB)
import test_sql_ab  # noqa: F401
from ab_conf import (
    CLUSTER_CONF,
    CLUSTER_SHAPES,
    CLUSTER_VARIANT_CONF,
    CLUSTER_VARIANTS,
    LOCAL_AB,
    UCX_AVAILABLE,
    read_from_files_but_combined,
)

from pyspark_shuffle.testing import ShuffleComparison

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

ab = ShuffleComparison(conf=CLUSTER_CONF, variants=CLUSTER_VARIANTS, variant_conf=CLUSTER_VARIANT_CONF)
ab.extend(LOCAL_AB, names=CLUSTER_SHAPES)


@ab.workload
def spread_shuffle(spark):
    """12 map tasks over 3 one-core executors, every map task writing to every reduce partition:
    the plugin's counters of these reduce tasks (a diff around the job) and the executor hosts."""
    from operator import add

    from pyspark_shuffle import metrics

    before = metrics(spark).get("application", {}).get("tasks_by_remote_sources", {})
    rdd = spark.sparkContext.parallelize(range(120000), 12).map(lambda x: (x % 600, x))
    result = sorted(rdd.reduceByKey(add, 6).collect())
    after = metrics(spark).get("application", {}).get("tasks_by_remote_sources", {})
    tasks = {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}
    hosts = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().keySet().toString()
    return result, tasks, hosts


@pytest.fixture(scope="module", autouse=True)
def on_the_cluster(pyspark_shuffle_cluster):
    ab.master = pyspark_shuffle_cluster.master_url
    yield pyspark_shuffle_cluster


@pytest.mark.parametrize("name", [n for n in ab.names if n != "spread_shuffle"])
def test_same_result_on_the_cluster(name):
    ab.assert_same(name)


def test_every_reduce_task_reads_from_two_remote_hosts(on_the_cluster):
    spec = on_the_cluster.spec
    comparison = ab.run()
    expected, _, hosts = comparison.sort.value("spread_shuffle")
    assert expected[:2] == [(0, sum(range(0, 120000, 600))), (1, sum(range(1, 120000, 600)))]
    for variant, side in comparison.plugins.items():
        result, tasks, hosts = side.value("spread_shuffle")
        assert result == expected, variant
        for worker in range(1, spec.workers + 1):
            assert spec.worker_address(worker) in hosts, (variant, hosts)
        assert sum(tasks.values()) == 6, (variant, tasks)
        if variant == "push":
            # A merged partition is read from its owner's chunks: one source, or none where the
            # reduce task runs on the owner; blocks not merged in time come from their files.
            continue
        assert all(int(sources) >= 2 for sources in tasks), (
            f"{variant}: reduce tasks by remote sources {tasks}"
        )


@pytest.mark.skipif(not UCX_AVAILABLE, reason="no UCX libraries: pip install 'pyspark-shuffle[ucx]'")
def test_ucx_reads_cross_the_hosts_links():
    counters = ab.run().plugins["ucx-tcp"].metrics["application"]
    assert set(read_from_files_but_combined(counters)) == {"local", "ucx"}, counters
    assert set(counters["requests_by_transport"]) <= {"ucx", "netty"}, counters
    assert counters["transport_fallbacks"] == 0, counters


def test_aggregations_are_combined_across_the_hosts():
    for variant in ("adaptive", "push"):
        combine = ab.run().plugins[variant].metrics["application"]["combine"]
        assert combine["segments_read"] > 0 and combine["rows_out"] < combine["rows_in"], (variant, combine)
        assert combine["failed_reads"] == 0, (variant, combine)
