"""The whole A/B equality suite on a multi-host cluster: Spark standalone, 3 workers in network
namespaces with rate-limited links (the ``pyspark_shuffle_cluster`` fixture; skipped, with the
reason, without the privileges to create namespaces)."""

import pytest
import test_rdd_ab  # noqa: F401  (registers its workloads in LOCAL_AB)
import test_sql_ab  # noqa: F401
from ab_conf import (
    ADAPTIVE_VARIANT,
    LOCAL_AB,
    PUSH_VARIANT,
    SQL_AQE_CONF,
    UCX_AVAILABLE,
    read_from_files_but_combined,
)

from pyspark_shuffle.testing import ShuffleComparison

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

#: Every executor registered before the first job, so map tasks spread over all three hosts.
CLUSTER_CONF = dict(
    SQL_AQE_CONF,
    **{
        "spark.executor.memory": "768m",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
    },
)

#: UCX between hosts: TCP only, since the namespaces share one kernel and UCX would otherwise
#: reach the other "hosts" through shared memory, bypassing their links.
UCX_VARIANT = {"ucx-tcp": {"order": "critical", "transport": "ucx"}} if UCX_AVAILABLE else {}
#: The default order, push and UCX over TCP (both reading in the critical order). The naive and
#: pairwise orders are compared on local-cluster (test_rdd_ab, test_sql_ab), which keeps this
#: suite's links-bound time down.
ab = ShuffleComparison(
    conf=CLUSTER_CONF,
    variants=dict(adaptive=ADAPTIVE_VARIANT, push=PUSH_VARIANT, **UCX_VARIANT),
    variant_conf={name: {"spark.executorEnv.UCX_TLS": "tcp,self"} for name in UCX_VARIANT},
)
ab.extend(LOCAL_AB)


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
