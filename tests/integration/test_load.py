"""The plugin under load: one application runs several jobs at once while heartbeats come every
50 ms, speculation is on, task attempts fail on purpose and the CPU is oversubscribed (more task
slots than the machine's 2 cores, and a CPU burner per core beside them). The jobs: Spark SQL
aggregations (local reduction), a join (mode="push"), RDD shuffles with and without map-side
combine. The autouse log check then reads every log of the application: no uncaught exception,
no executor lost, no error but the injected ones.

- ``make test``: one round of the jobs on ``local-cluster[2,2,1024]`` (4 slots), each result
  checked against its value computed here. Its executors share one host, where Spark never
  launches a speculative copy (none beside an attempt on the same host).
- ``make test-all``: rounds for minutes on the namespace cluster (3 hosts, so speculative copies
  do run), every result equal to Spark's sort shuffle's under the same load.
"""

import collections
import os
import subprocess
import sys
import time

import pytest

from pyspark_shuffle.sessions import PLUGIN, start_session
from pyspark_shuffle.testing import ShuffleComparison

pytestmark = [pytest.mark.integration, pytest.mark.spark_logs(errors=[r"injected failure"])]

LOAD_CONF = {
    "spark.executor.heartbeatInterval": "50ms",
    "spark.speculation": "true",
    "spark.speculation.interval": "50ms",
    "spark.speculation.quantile": "0.5",
    "spark.speculation.multiplier": "1.2",
    "spark.speculation.minTaskRuntime": "100ms",
    "spark.task.maxFailures": "8",
    "spark.scheduler.mode": "FAIR",
    "spark.default.parallelism": "8",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.adaptive.autoBroadcastJoinThreshold": "-1",
    "spark.reducer.maxSizeInFlight": "1m",
}
LOCAL_MASTER = "local-cluster[2,2,1024]"
OPTIONS = {"mode": "push"}

#: Rounds of the job mix on the namespace cluster, each job of a round started at once.
LONG_ROUNDS = 12

AGGREGATE_ROWS, FAILING_ROWS, FAILING_MAPS = 200_000, 100_000, 8
LEFT_ROWS, RIGHT_ROWS, JOIN_KEYS = 60_000, 24_000, 12_000
RDD_ROWS, GROUP_ROWS = 30_000, 20_000


def _fail_first_attempt(row, at_row):
    """Raise in the first attempt of every third task once it reaches row ``at_row``."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context.attemptNumber() == 0 and context.partitionId() % 3 == 0 and row == at_row:
        raise RuntimeError(f"injected failure in partition {context.partitionId()}")


def sql_aggregate(spark, round_):
    from pyspark.sql import functions as F

    df = spark.range(0, AGGREGATE_ROWS, 1, 16).select(
        ((F.col("id") * 7 + round_) % 5000).alias("k"), F.col("id").alias("v")
    )
    grouped = df.groupBy("k").agg(F.sum("v"), F.count("*"), F.min("v"), F.max("v"))
    return sorted(tuple(r) for r in grouped.collect())


def sql_aggregate_failing(spark, round_):
    # Map tasks of the aggregation fail after 90% of their rows, once.
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    per_map = FAILING_ROWS // FAILING_MAPS

    @F.udf(LongType())
    def checked(v):
        _fail_first_attempt(v, (v // per_map) * per_map + per_map * 9 // 10)
        return v

    df = spark.range(0, FAILING_ROWS, 1, FAILING_MAPS).select(
        ((F.col("id") + round_) % 1000).alias("k"), checked("id").alias("v")
    )
    return sorted(tuple(r) for r in df.groupBy("k").agg(F.sum("v"), F.count("*")).collect())


def sql_join(spark, round_):
    from pyspark.sql import functions as F

    left = spark.range(0, LEFT_ROWS, 1, 8).select(
        (F.col("id") % JOIN_KEYS).alias("k"), F.col("id").alias("a")
    )
    right = spark.range(0, RIGHT_ROWS, 1, 6).select(
        (F.col("id") % JOIN_KEYS).alias("k"), (F.col("id") + round_).alias("b")
    )
    joined = left.join(right, "k").select("k", (F.col("a") * 3 + F.col("b")).alias("x"))
    row = joined.agg(F.count("*"), F.sum("x"), F.sum(F.col("k") * F.col("x") % 1009)).collect()[0]
    return tuple(row)


def rdd_reduce_by_key(spark, round_):
    def rows(index, it):
        for i, x in enumerate(it):
            _fail_first_attempt(i, 2250)
            yield (x % 997, x + round_)

    data = spark.sparkContext.parallelize(range(RDD_ROWS), 12).mapPartitionsWithIndex(rows)
    return sorted(data.reduceByKey(lambda a, b: a + b, 8).collect())


def rdd_group_and_sort(spark, round_):
    data = spark.sparkContext.parallelize(range(GROUP_ROWS), 10).map(lambda x: (x % 301, x * round_))
    grouped = data.groupByKey(6).mapValues(lambda xs: (len(list(xs)), sum(xs)))

    def failing_reduce(index, it):
        rows = list(it)
        _fail_first_attempt(0, 0)
        return rows

    return grouped.sortByKey(numPartitions=4).mapPartitionsWithIndex(failing_reduce).collect()


JOBS = (sql_aggregate, sql_aggregate_failing, sql_join, rdd_reduce_by_key, rdd_group_and_sort)


def expected(round_):
    """What each job of round ``round_`` returns, computed here."""
    aggregate = {}
    for v in range(AGGREGATE_ROWS):
        k = (v * 7 + round_) % 5000
        s, c, lo, hi = aggregate.get(k, (0, 0, v, v))
        aggregate[k] = (s + v, c + 1, min(lo, v), max(hi, v))
    failing = collections.defaultdict(lambda: [0, 0])
    for v in range(FAILING_ROWS):
        entry = failing[(v + round_) % 1000]
        entry[0] += v
        entry[1] += 1
    lefts, rights = collections.defaultdict(list), collections.defaultdict(list)
    for a in range(LEFT_ROWS):
        lefts[a % JOIN_KEYS].append(a)
    for i in range(RIGHT_ROWS):
        rights[i % JOIN_KEYS].append(i + round_)
    xs = [(k, a * 3 + b) for k, as_ in lefts.items() for a in as_ for b in rights.get(k, ())]
    sums = collections.Counter()
    for x in range(RDD_ROWS):
        sums[x % 997] += x + round_
    groups = collections.defaultdict(lambda: [0, 0])
    for x in range(GROUP_ROWS):
        groups[x % 301][0] += 1
        groups[x % 301][1] += x * round_
    return {
        "sql_aggregate": sorted((k, *v) for k, v in aggregate.items()),
        "sql_aggregate_failing": sorted((k, *v) for k, v in failing.items()),
        "sql_join": (len(xs), sum(x for _, x in xs), sum(k * x % 1009 for k, x in xs)),
        "rdd_reduce_by_key": sorted(sums.items()),
        "rdd_group_and_sort": [(k, tuple(v)) for k, v in sorted(groups.items())],
    }


def run_rounds(spark, rounds):
    """Each round starts every job at once, from threads of its own; the results by round, and
    what ran: jobs, tasks (those that failed among them), seconds."""
    from concurrent.futures import ThreadPoolExecutor

    sc = spark.sparkContext
    started = time.monotonic()
    results = []
    with ThreadPoolExecutor(len(JOBS)) as pool:
        for round_ in range(rounds):
            futures = {job.__name__: pool.submit(job, spark, round_) for job in JOBS}
            results.append({name: _plain(future.result()) for name, future in futures.items()})
    tracker = sc.statusTracker()
    jobs = tracker.getJobIdsForGroup()
    stages = [tracker.getStageInfo(s) for j in jobs for s in tracker.getJobInfo(j).stageIds]
    stages = [s for s in stages if s is not None]
    figures = {
        "jobs": len(jobs),
        "tasks": sum(s.numCompletedTasks for s in stages),
        "failed_tasks": sum(s.numFailedTasks for s in stages),
        "speculative_tasks": _speculative_tasks(sc),
        "seconds": round(time.monotonic() - started, 1),
    }
    return results, figures


def _speculative_tasks(sc):
    """Speculative copies the scheduler launched, as Spark's status store lists them."""
    store, jvm = sc._jsc.sc().statusStore(), sc._jvm
    none = jvm.java.util.Collections.emptyList()
    stages = store.stageList(none, False, False, sc._gateway.new_array(jvm.double, 0), none)
    count = 0
    for i in range(stages.size()):
        stage = stages.apply(i)
        tasks = store.taskList(stage.stageId(), stage.attemptId(), 1 << 30)
        count += sum(1 for j in range(tasks.size()) if tasks.apply(j).speculative())
    return count


def _plain(value):
    """Rows and tuples as plain tuples, whatever Spark returned them as."""
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    return value


def load_for_minutes(spark):
    return run_rounds(spark, LONG_ROUNDS)


@pytest.fixture(scope="module")
def cpu_burner():
    """A busy process per core beside the cluster, at the same priority."""
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(os.cpu_count() or 2)
    ]
    try:
        yield
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()


def _assert_injected_failures_retried(figures):
    assert figures["failed_tasks"] > 0, figures
    sys.stderr.write(f"load figures (plugin): {figures}\n")


def test_jobs_at_once_under_load(cpu_burner):
    from pyspark import cloudpickle

    # This process's session: its executors cannot import this module, so its functions travel.
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark = start_session(PLUGIN, conf=LOAD_CONF, options=OPTIONS, master=LOCAL_MASTER, app_name="load")
    try:
        (results,), figures = run_rounds(spark, 1)
    finally:
        spark.stop()
    want = expected(0)
    for name in want:
        assert results[name] == _plain(want[name]), f"job {name}: the plugin's result differs"
    _assert_injected_failures_retried(figures)


@pytest.mark.slow
@pytest.mark.cluster
def test_jobs_at_once_under_load_for_minutes_on_the_cluster(cpu_burner, pyspark_shuffle_cluster):
    ab = ShuffleComparison(
        conf=LOAD_CONF, options=OPTIONS, master=pyspark_shuffle_cluster.master_url, timeout=3600
    )
    ab.workload(load_for_minutes, name="load")
    result = ab.run()
    sort_results, _ = result.sort.value("load")
    plugin_results, figures = result.plugins["plugin"].value("load")
    assert len(plugin_results) == len(sort_results) == LONG_ROUNDS
    for round_, (want, got) in enumerate(zip(sort_results, plugin_results)):
        for name in want:
            assert got[name] == want[name], f"round {round_}, job {name}: the plugin's result differs"
    _assert_injected_failures_retried(figures)
    assert figures["seconds"] > 120, figures
