"""The plugin under load: one application runs several jobs at once while heartbeats come every
50 ms, speculation is on, task attempts fail on purpose and the CPU is oversubscribed (2
executors x 2 task slots on 2 cores, and a CPU burner beside them). The jobs: Spark SQL
aggregations (local reduction), a join (mode="push"), RDD shuffles with and without map-side
combine. Every result equals sort's, under the same load; the autouse log check then reads every
log of both applications: no uncaught exception, no executor lost, no error but the injected ones.

The short version runs in ``make test``; the long one, marked slow, for minutes in ``make test-all``.
"""

import os
import subprocess
import sys
import time

import pytest

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
MASTER = "local-cluster[2,2,1024]"
OPTIONS = {"mode": "push"}

#: Rounds of the job mix, each job of a round started at once; the long version's.
SHORT_ROUNDS = 2
LONG_ROUNDS = 16


def _fail_first_attempt(row, at_row):
    """Raise in the first attempt of every third task once it reaches row ``at_row``."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context.attemptNumber() == 0 and context.partitionId() % 3 == 0 and row == at_row:
        raise RuntimeError(f"injected failure in partition {context.partitionId()}")


def sql_aggregate(spark, round_):
    from pyspark.sql import functions as F

    df = spark.range(0, 400_000, 1, 16).select(
        ((F.col("id") * 7 + round_) % 5000).alias("k"), F.col("id").alias("v")
    )
    grouped = df.groupBy("k").agg(F.sum("v"), F.count("*"), F.min("v"), F.max("v"))
    return sorted(tuple(r) for r in grouped.collect())


def sql_aggregate_failing(spark, round_):
    # Map tasks of the aggregation fail after 90% of their rows, once.
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    per_partition = 200_000 // 8

    @F.udf(LongType())
    def checked(v):
        _fail_first_attempt(v, (v // per_partition) * per_partition + per_partition * 9 // 10)
        return v

    df = spark.range(0, 200_000, 1, 8).select((F.col("id") % 1000).alias("k"), checked("id").alias("v"))
    return sorted(tuple(r) for r in df.groupBy("k").agg(F.sum("v"), F.count("*")).collect())


def sql_join(spark, round_):
    from pyspark.sql import functions as F

    left = spark.range(0, 100_000, 1, 8).select((F.col("id") % 20_000).alias("k"), F.col("id").alias("a"))
    right = spark.range(0, 40_000, 1, 6).select(
        (F.col("id") % 20_000).alias("k"), (F.col("id") + round_).alias("b")
    )
    joined = left.join(right, "k").select("k", (F.col("a") * 3 + F.col("b")).alias("x"))
    return joined.agg(F.count("*"), F.sum("x"), F.sum(F.col("k") * F.col("x") % 1009)).collect()[0][:]


def rdd_reduce_by_key(spark, round_):
    def rows(index, it):
        for i, x in enumerate(it):
            _fail_first_attempt(i, 2250)
            yield (x % 997, x + round_)

    data = spark.sparkContext.parallelize(range(30_000), 12).mapPartitionsWithIndex(rows)
    return sorted(data.reduceByKey(lambda a, b: a + b, 8).collect())


def rdd_group_and_sort(spark, round_):
    data = spark.sparkContext.parallelize(range(20_000), 10).map(lambda x: (x % 301, x * round_))
    grouped = data.groupByKey(6).mapValues(lambda xs: (len(list(xs)), sum(xs)))

    def failing_reduce(index, it):
        rows = list(it)
        _fail_first_attempt(0, 0)
        return rows

    return grouped.sortByKey(numPartitions=4).mapPartitionsWithIndex(failing_reduce).collect()


JOBS = (sql_aggregate, sql_aggregate_failing, sql_join, rdd_reduce_by_key, rdd_group_and_sort)


def run_rounds(spark, rounds):
    """Each round starts every job at once, from threads of its own; the results by round."""
    from concurrent.futures import ThreadPoolExecutor

    sc = spark.sparkContext
    started = time.monotonic()
    results = []
    with ThreadPoolExecutor(len(JOBS)) as pool:
        for round_ in range(rounds):
            futures = {job.__name__: pool.submit(job, spark, round_) for job in JOBS}
            results.append({name: future.result() for name, future in futures.items()})
    tracker = sc.statusTracker()
    stages = [
        tracker.getStageInfo(s) for j in tracker.getJobIdsForGroup() for s in tracker.getJobInfo(j).stageIds
    ]
    stages = [s for s in stages if s is not None]
    figures = {
        "jobs": len(tracker.getJobIdsForGroup()),
        "tasks": sum(s.numCompletedTasks for s in stages),
        "failed_tasks": sum(s.numFailedTasks for s in stages),
        "seconds": round(time.monotonic() - started, 1),
    }
    return results, figures


def load_short(spark):
    return run_rounds(spark, SHORT_ROUNDS)


def load_long(spark):
    return run_rounds(spark, LONG_ROUNDS)


def _comparison(workload):
    ab = ShuffleComparison(conf=LOAD_CONF, options=OPTIONS, master=MASTER, timeout=1800)
    ab.workload(workload, name="load")
    return ab


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


def _check(ab):
    result = ab.run()
    sort_results, _ = result.sort.value("load")
    plugin_results, figures = result.plugins["plugin"].value("load")
    for round_, (expected, actual) in enumerate(zip(sort_results, plugin_results)):
        for name in expected:
            assert actual[name] == expected[name], f"round {round_}, job {name}: the plugin's result differs"
    assert len(plugin_results) == len(sort_results)
    # The load did what it is for: failures were injected and retried.
    assert figures["failed_tasks"] > 0, figures
    sys.stderr.write(f"load figures (plugin): {figures}\n")
    return figures


def test_jobs_at_once_under_load(cpu_burner):
    _check(_comparison(load_short))


@pytest.mark.slow
def test_jobs_at_once_under_load_for_minutes(cpu_burner):
    figures = _check(_comparison(load_long))
    assert figures["seconds"] > 120, figures
