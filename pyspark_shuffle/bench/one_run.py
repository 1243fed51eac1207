"""One benchmark run: ``python -m pyspark_shuffle.bench.one_run JOB.json OUT.json``.

Starts a fresh Spark application (this process's own driver JVM, on the job's master) with the
job's manager and configuration, checks the manager through py4j, runs the workload once in
the workload job group, reads Spark's numbers from the REST API and the plugin's counters, stops
the application and writes the outcome as JSON. A workload that fails (an executor lost to an
OOM, say) is written as status "failed" with its error; the process still exits 0.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
import traceback
from typing import Any, Dict, Optional, Sequence

from .. import spark_logs
from .._child_process import child_main
from .._metrics import FETCH
from ..bench_run import TIME_NUMBERS
from ..sessions import PLUGIN, SORT, start_session
from . import held, profiles, sparkmetrics
from .config import ADAPTIVE
from .faults import Kill
from .links import LinkSampler, usage
from .workloads import WORKLOADS


def start(job: Dict[str, Any]) -> Any:
    manager = PLUGIN if job["manager_kind"] == ADAPTIVE else SORT
    # environ={}: the test suite's PYSPARK_SHUFFLE_TEST_CONF does not leak into benchmarks.
    return start_session(
        manager,
        job["conf"],
        job["options"],
        job["master"],
        app_name=f"pyspark-shuffle-bench-{job['manager']}",
        environ={},
    )


def run(job: Dict[str, Any]) -> Dict[str, Any]:
    from .._metrics import fetch_memory_peaks, fetch_memory_series, mark_metrics
    from .._metrics import metrics as plugin_metrics
    from ..report.data import reports_of_session

    outcome: Dict[str, Any] = {"status": "failed", "error": None}
    started = time.monotonic()
    spark = start(job)
    outcome["session_start_s"] = round(time.monotonic() - started, 3)
    try:
        sc = spark.sparkContext
        sc.setLogLevel("WARN")
        outcome["app_id"] = sc.applicationId
        # Read by the parent once this process and its executors ended.
        outcome["logs"] = spark_logs.of_session(spark).to_dict()
        warmup = int(job.get("warmup") or 0)
        cold: Optional[Dict[str, Any]] = None
        if warmup:
            cold = _warm_up(spark, job, warmup)
            mark_metrics(spark)
            seen_shuffles = {r.get("shuffleId") for r in reports_of_session(spark)}
        sc.setJobGroup(
            sparkmetrics.WORKLOAD_GROUP, f"{job['workload']} skew={job['skew']}", interruptOnCancel=False
        )
        links = job.get("links") or {}
        sampler = LinkSampler({w: link["device"] for w, link in links.items()}) if links else None
        kill = _kill(sc, job["kill"]) if job.get("kill") else None
        begin, begin_epoch = time.perf_counter(), time.time()
        with sampler or contextlib.nullcontext(), kill or contextlib.nullcontext():
            try:
                outcome["result"] = WORKLOADS[job["workload"]](spark, job)
                outcome["status"] = "ok"
            except Exception as error:  # the run failed; recorded, not fatal
                outcome["error"] = _error_text(error)
                outcome["traceback"] = traceback.format_exc()[-4000:]
        outcome["wall_s"] = round(time.perf_counter() - begin, 3)
        if kill:
            outcome["fault"] = kill.record()
            missed = kill.failure()
            if missed and outcome["status"] == "ok":
                outcome["status"], outcome["error"] = "failed", missed
        ended, ended_epoch = time.monotonic(), time.time()
        try:
            outcome.update(sparkmetrics.collect(spark, ended, memory_of_stages=bool(warmup)))
            if cold is not None:
                outcome["warmup"] = warmup
                cold_numbers = sparkmetrics.collect(spark, ended, group=sparkmetrics.COLD_GROUP)
                outcome["cold"] = _cold_figures(cold, cold_numbers)
            if sampler:
                spans = {"workload": (begin_epoch, ended_epoch)}
                spans.update(
                    {kind: tuple(span) for kind, span in outcome["spans"].items() if kind != "other"}
                )
                outcome["links"] = usage(
                    sampler.samples, {w: link["rate_bps"] for w, link in links.items()}, spans
                )
                for worker, used in outcome["links"].items():
                    used["address"] = links[worker]["address"]
            plugin = plugin_metrics(spark)
            series = _settled_series(spark, fetch_memory_series, ended_epoch)
            outcome["fetch_memory"] = fetch_memory(
                fetch_memory_peaks(spark),
                plugin.get("executors") or {},
                outcome.pop("executor_memory_peaks", {}),
                series,
                outcome.get("spans", {}).get("reduce"),
            )
            outcome["memory_series"] = {
                e: held.within(s, (begin_epoch, ended_epoch)) for e, s in series.items()
            }
            outcome["plugin"] = plugin.get("since_mark" if warmup else "application") or {}
            outcome["push"] = plugin.get("push") or {}
            outcome["shuffles"] = [
                r for r in reports_of_session(spark) if not warmup or r.get("shuffleId") not in seen_shuffles
            ]
            if job.get("profile_dir"):
                since_ms = int(begin_epoch * 1000) if warmup else 0
                outcome["profile"] = _profile(job["profile_dir"], outcome, ended_epoch, since_ms)
        except Exception as error:
            outcome["metrics_error"] = _error_text(error)
            if outcome["status"] == "ok":
                outcome["status"] = "failed"
                outcome["error"] = "collecting metrics failed: " + outcome["metrics_error"]
    finally:
        spark.stop()
    return outcome


def fetch_memory(
    probe: Dict[str, Dict[str, int]],
    plugin_executors: Dict[str, Any],
    spark_peaks: Dict[str, Dict[str, Any]],
    series: Optional[Dict[str, Dict[str, Any]]] = None,
    reduce_span: Optional[Sequence[float]] = None,
) -> Dict[str, Dict[str, Optional[int]]]:
    """Per executor, what it held over the reduce stage (``reduce_span``, epoch seconds), from
    the probe's ``series``: the peak and time-weighted mean of the heap live after collections,
    direct memory, Netty's pool, the bytes buffered where fetched blocks arrive and RSS
    (:func:`held.over_span`); and the peaks of the memory its shuffle reads held and of the
    process: Netty's pooled and all its direct memory (the probe's), what the plugin's reduce
    tasks held against the executor's fetch budget and what its local reduction held (None under
    sort), and Spark's heap and RSS peaks; and how often reads ran out of Netty's memory: the
    episodes the probe saw Spark's fetcher flag (sort's) and the blocks the plugin's fetcher
    deferred (None under sort); and, in mode=push, the merge store's totals over the application
    (bytes too late to merge, freed once read, moved to disk; None elsewhere)."""
    series = series or {}
    return {
        executor: {
            **held.over_span(series.get(executor) or {}, reduce_span),
            "netty_pooled_bytes": probe.get(executor, {}).get("netty_pooled_bytes"),
            "netty_direct_bytes": probe.get(executor, {}).get("netty_direct_bytes"),
            "netty_oom_episodes": probe.get(executor, {}).get("netty_oom_episodes"),
            # mode=push's merge store, totals over the application: bytes that reached a sealed
            # partition, bytes freed once a stage read them, bytes moved to disk.
            "store_push_late_bytes": probe.get(executor, {}).get("store_push_late"),
            "store_released_after_read_bytes": probe.get(executor, {}).get("store_released_after_read"),
            "store_merged_to_disk_bytes": probe.get(executor, {}).get("store_merged_to_disk"),
            "plugin_fetch_bytes": plugin_executors.get(executor, {}).get(FETCH.executor_fetch_peak_bytes),
            "plugin_combine_bytes": plugin_executors.get(executor, {}).get(FETCH.combine_memory_peak_bytes),
            "plugin_oom_deferrals": plugin_executors.get(executor, {}).get(FETCH.direct_memory_deferrals),
            "heap_peak_bytes": spark_peaks.get(executor, {}).get("heap_peak_bytes"),
            "rss_peak_bytes": spark_peaks.get(executor, {}).get("rss_peak_bytes"),
        }
        for executor in sorted(set(probe) | set(spark_peaks) | set(series))
        if executor != "driver"
    }


def _settled_series(spark: Any, read: Any, ended_epoch: float, timeout_s: float = 5.0) -> Dict[str, Any]:
    """The probe's series once every executor's reaches past ``ended_epoch`` (each sends its
    closed buckets every second), or as they are at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        series = read(spark)
        reached = all((s.get("start_ms") or [0])[-1] >= ended_epoch * 1000 for s in series.values())
        if reached or time.monotonic() > deadline:
            return series
        time.sleep(0.1)  # poll interval; the loop ends on the condition or the deadline


def _warm_up(spark: Any, job: Dict[str, Any], runs: int) -> Dict[str, Any]:
    """Runs the workload ``runs`` times before the timed run, as a long-lived application has run
    jobs before: the first in :data:`~sparkmetrics.COLD_GROUP` (its figures are the cold ones),
    the rest in :data:`~sparkmetrics.WARMUP_GROUP`. Returns the first's wall time and result."""
    sc = spark.sparkContext
    cold: Dict[str, Any] = {}
    for run in range(runs):
        group = sparkmetrics.COLD_GROUP if run == 0 else sparkmetrics.WARMUP_GROUP
        sc.setJobGroup(group, f"warm-up {run + 1} of {runs}", interruptOnCancel=False)
        begin = time.perf_counter()
        result = WORKLOADS[job["workload"]](spark, job)
        if run == 0:
            cold = {"wall_s": round(time.perf_counter() - begin, 3), "result": result}
    return cold


def _cold_figures(cold: Dict[str, Any], spark_numbers: Dict[str, Any]) -> Dict[str, Any]:
    figures = {name: spark_numbers.get(name) for name in TIME_NUMBERS if name != "wall_s"}
    return {"wall_s": cold["wall_s"], "result": cold["result"], **figures}


def _profile(
    directory: str, outcome: Dict[str, Any], workload_ended_epoch: float, since_ms: int = 0
) -> Dict[str, Any]:
    """The run's profile, once every executor that ran a task has sent the segment it was in
    when the workload ended (each does once no task ran for a moment); with ``since_ms`` (a
    timed run after warm-ups) only the segments that end after it."""
    executors = list(outcome.get("memory_peak_by_executor") or {})
    app_id = outcome["app_id"]
    missing = profiles.wait_for_segments(directory, app_id, executors, int(workload_ended_epoch * 1000), 10.0)
    summary = profiles.summarize_run(directory, app_id, outcome.get("stages") or [], since_ms)
    summary["missing_last_segment"] = missing
    return summary


def _kill(sc: Any, kill: Dict[str, Any]) -> Kill:
    from ..cluster import kill_executors

    return Kill(
        sc.statusTracker(),
        sparkmetrics.WORKLOAD_GROUP,
        kill["point"],
        kill["worker"],
        lambda: kill_executors(kill["cluster"], kill["worker"]),
    )


def _error_text(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:8])[:2000]


main = child_main(run, json.load, json.dump, binary=False)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
