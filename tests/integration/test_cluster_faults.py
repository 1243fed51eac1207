"""Faults on the multi-host cluster while reducers fetch, under Spark's sort shuffle and the
plugin (mode pull, and mode push with push_reliability="replicated"): worker 2's link cut and
healed, worker 2's executor SIGKILLed, in an RDD shuffle and (killed) in Spark SQL with AQE,
whose reduce tasks run at their partitions' owners under push. Each job must end with exactly
the rows of a fault-free run (through Spark's retries and stage recomputation); under replicated
push, the SIGKILL reruns no map task."""

import random
import threading
import time
import zlib

import pytest
from status_store import map_tasks_completed

from pyspark_shuffle.cluster import find_by_master, kill_executors, set_link
from pyspark_shuffle.testing import ShuffleComparison

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

MAPS, REDUCES, KEYS, RECORDS, RECORD_BYTES = 12, 6, 48, 2500, 2048  # ~60 MB of shuffle
FAULTY_WORKER = 2
CUT_SECONDS = 5.0

CONF = {
    "spark.executor.memory": "768m",
    "spark.scheduler.minRegisteredResourcesRatio": "1.0",
    "spark.scheduler.maxRegisteredResourcesWaitingTime": "120s",
}
VARIANTS = {"plugin": {}, "push-replicated": {"mode": "push", "push_reliability": "replicated"}}

#: The SIGKILL runs in `make test`; the link cut (recovered through Spark's fetch retries too,
#: and longer) in `make test-all` only, in applications of its own.
killed = ShuffleComparison(conf=CONF, variants=VARIANTS)
cut = ShuffleComparison(conf=CONF, variants=VARIANTS)


def records(index):
    rnd = random.Random(index)
    return [(rnd.randrange(KEYS), rnd.randbytes(RECORD_BYTES)) for _ in range(RECORDS)]


def summarize(pairs):
    """key -> (records, sum of CRC-32s, bytes): equal only if every record arrived once."""
    out = {}
    for key, value in pairs:
        n, crc, size = out.get(key, (0, 0, 0))
        out[key] = (n + 1, crc + zlib.crc32(value), size + len(value))
    return sorted((k, *v) for k, v in out.items())


def expected_rows():
    return summarize(pair for index in range(MAPS) for pair in records(index))


def reduce_running(tracker, group):
    """Whether a job of ``group`` that reads a shuffle has running tasks in its last stage: an RDD
    job's reduce stage, or the job AQE submits after a map stage ran as a job of its own."""
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        if info is None or len(info.stageIds) < 2:
            continue
        stage = tracker.getStageInfo(max(info.stageIds))
        if stage is not None and stage.numActiveTasks > 0:
            return True
    return False


def rdd_shuffle(spark):
    sc = spark.sparkContext
    shuffled = sc.parallelize(range(MAPS), MAPS).flatMap(records).partitionBy(REDUCES)
    return sorted(shuffled.mapPartitions(summarize).collect())


def sql_shuffle(spark):
    """Every record shuffled by key (AQE on, Spark's default, keeps ``repartition``'s REDUCES
    partitions), then summarised per key as :func:`summarize` does."""
    from pyspark.sql import functions as F

    sc = spark.sparkContext
    table = spark.createDataFrame(sc.parallelize(range(MAPS), MAPS).flatMap(records), "key int, value binary")
    rows = (
        table.repartition(REDUCES, "key")
        .groupBy("key")
        .agg(F.count(F.lit(1)), F.sum(F.crc32("value")), F.sum(F.length("value")))
        .collect()
    )
    return sorted(tuple(int(v) for v in row) for row in rows)


def with_fault(spark, inject, shuffle=rdd_shuffle):
    """Run ``shuffle`` in a thread; once its reduce stage has running tasks, ``inject(cluster)``.
    Returns the rows, what the fault did (and whether the job was still running after it) and
    how many map tasks ran beyond the first MAPS."""
    sc = spark.sparkContext
    maps_before = map_tasks_completed(spark)
    cluster = find_by_master(sc.master)
    assert cluster is not None, f"no namespace cluster has master {sc.master}"
    group, out = f"fault-{inject.__name__}", {}

    def job():
        sc.setJobGroup(group, group)
        try:
            out["rows"] = shuffle(spark)
        except Exception as error:  # reported below as the job's error
            out["error"] = f"{type(error).__name__}: {error}"

    thread = threading.Thread(target=job, daemon=True)
    thread.start()
    deadline = time.monotonic() + 300
    while not reduce_running(sc.statusTracker(), group):
        assert thread.is_alive(), f"the job ended before its reduce stage was seen running: {out}"
        assert time.monotonic() < deadline, "the reduce stage did not start within 300 s"
        time.sleep(0.02)  # polling Spark's status tracker for the reduce stage
    effect = inject(cluster)
    running_after = thread.is_alive()
    thread.join(600)
    assert not thread.is_alive(), "the job did not end within 600 s of the fault"
    # The next workload, or the application's end, finds every worker's executor up: one the
    # fault made its worker start again, if still starting as the application stopped, would
    # fail to reach the driver and log an uncaught error.
    back_by = time.monotonic() + 120
    while sc._jsc.sc().getExecutorMemoryStatus().size() < cluster.spec.workers + 1:
        assert time.monotonic() < back_by, "the workers' executors were not all back within 120 s"
        time.sleep(0.05)  # polling the driver's block managers for the restarted executor
    sc._jsc.sc().listenerBus().waitUntilEmpty()
    reruns = map_tasks_completed(spark) - maps_before - MAPS
    return out.get("rows"), out.get("error"), effect, running_after, reruns


def cut_link(cluster):
    set_link(cluster.name, FAULTY_WORKER, connected=False)
    try:
        time.sleep(CUT_SECONDS)  # the outage itself: how long the link stays down
    finally:
        set_link(cluster.name, FAULTY_WORKER, connected=True)
    return "cut"


def kill_executor(cluster):
    return kill_executors(cluster.name, FAULTY_WORKER)


@cut.workload
def link_cut_during_reduce(spark):
    return with_fault(spark, cut_link)


@killed.workload
def executor_killed_during_reduce(spark):
    return with_fault(spark, kill_executor)


@killed.workload
def executor_killed_during_sql_reduce(spark):
    return with_fault(spark, kill_executor, sql_shuffle)


@pytest.fixture(scope="module", autouse=True)
def on_the_cluster(pyspark_shuffle_cluster):
    killed.master = cut.master = pyspark_shuffle_cluster.master_url
    yield pyspark_shuffle_cluster


# Each application loses worker 2's executor once per kill workload, on purpose.
@pytest.mark.spark_logs(killed=2)
@pytest.mark.parametrize(
    "name, ab",
    [
        pytest.param("link_cut_during_reduce", cut, marks=pytest.mark.slow),
        ("executor_killed_during_reduce", killed),
        ("executor_killed_during_sql_reduce", killed),
    ],
)
def test_fault_during_reduce_gives_the_fault_free_rows(name, ab):
    expected = expected_rows()
    comparison = ab.run()
    sides = {"sort": comparison.sort, **comparison.plugins}
    reruns = {}
    for variant, side in sides.items():
        rows, error, effect, running_after, reruns[variant] = side.value(name)
        assert error is None, f"{variant}: the job failed: {error}"
        assert effect, f"{variant}: the fault did nothing ({effect!r})"
        assert running_after, f"{variant}: the job ended before the fault ended"
        assert rows == expected, f"{variant}: rows differ from a fault-free run"
    print(f"{name}: map tasks rerun {reruns}")
    if name.startswith("executor_killed"):
        # The lost executor's map outputs were merged at the other workers as the map stage ended.
        assert reruns["push-replicated"] == 0, reruns
