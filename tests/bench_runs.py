"""Bench run records for the table, frame and report tests: what identifies a run filled in."""

from pyspark_shuffle.bench_run import BenchRun


def bench_run(**fields) -> BenchRun:
    """A record of ``fields``, the identifying ones a test leaves out made up."""
    identity = {"index": 0, "repeat": 0, "manager": "sort", "workload": "dummy", "skew": 0.0}
    values = {**identity, **fields}
    values.setdefault("manager_kind", values["manager"].split(":")[0])
    return BenchRun(**values)
