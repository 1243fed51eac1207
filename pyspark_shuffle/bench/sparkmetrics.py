"""Spark's own numbers of a run, read from the child application's REST API before it stops.

The REST store is filled asynchronously by Spark's status listener. To read final numbers the
child runs its workload in job group :data:`WORKLOAD_GROUP`, then a one-task "fence" job in
:data:`FENCE_GROUP`; the listener handles events in the order they were posted, so once the fence
job shows as finished every job, stage and task of the workload has been recorded.
:func:`collect` polls for that with a deadline.

Executor memory peaks reach the driver only with executor heartbeats (the executor samples them
every ``spark.executor.metrics.pollingInterval`` and reports the peaks of each stage at its next
heartbeat after the stage's tasks ended). So :func:`collect` also waits, with the same deadline,
until every executor that ran tasks has reported peaks and two heartbeat intervals have passed since the
workload ended; the harness sets a short heartbeat interval for that.

``peak_executor_memory_bytes`` is the maximum over executors (the driver excluded) of
``JVMHeapMemory + JVMOffHeapMemory`` peaks (used heap plus used non-heap memory of the executor
JVM; the two peaks may come from different moments, so the sum is an upper bound);
``executor_memory_peaks`` holds each executor's heap and RSS (``ProcessTreeJVMRSSMemory``) peaks.
"""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Optional, Tuple

WORKLOAD_GROUP = "pyspark-shuffle-bench-workload"
#: ``--warmup``: the first run of the workload in an application (its figures are the cold ones)
#: and the further untimed runs before the timed one.
COLD_GROUP = "pyspark-shuffle-bench-cold"
WARMUP_GROUP = "pyspark-shuffle-bench-warmup"
FENCE_GROUP = "pyspark-shuffle-bench-fence"
DONE_JOB = ("SUCCEEDED", "FAILED")
DONE_STAGE = ("COMPLETE", "FAILED", "SKIPPED")


class RestClient:
    """GETs JSON from ``<ui>/api/v1/applications/<app id>/...``."""

    def __init__(self, ui_url: str, app_id: str, timeout: float = 10.0) -> None:
        self.base = f"{ui_url.rstrip('/')}/api/v1/applications/{app_id}"
        self.timeout = timeout

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(f"{self.base}/{path}", timeout=self.timeout) as response:
            return json.loads(response.read().decode("utf-8"))


def run_fence(spark: Any) -> None:
    """A one-task job in :data:`FENCE_GROUP`, started after the workload's jobs ended."""
    sc = spark.sparkContext
    sc.setJobGroup(FENCE_GROUP, "status fence", interruptOnCancel=False)
    try:
        sc.parallelize([0], 1).count()
    finally:
        sc.setJobGroup(WORKLOAD_GROUP, "after fence", interruptOnCancel=False)


def parse_time(text: Optional[str]) -> Optional[float]:
    """Seconds since the epoch of a REST timestamp such as ``2026-01-31T12:00:00.123GMT``."""
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fGMT").replace(tzinfo=timezone.utc).timestamp()


def wait_for_fence(client: RestClient, deadline: float) -> List[dict]:
    """The application's jobs, once the fence job is finished in the REST data."""
    while True:
        jobs = client.get("jobs")
        fences = [j for j in jobs if j.get("jobGroup") == FENCE_GROUP]
        if fences and all(j.get("status") in DONE_JOB for j in fences):
            return jobs
        if time.monotonic() > deadline:
            raise TimeoutError("the REST API did not show the fence job finished before the deadline")
        time.sleep(0.1)  # poll interval; the loop ends on the condition or the deadline


def wait_for_executor_peaks(client: RestClient, not_before: float, deadline: float) -> List[dict]:
    """All executors (the driver excluded) once every executor that ran a task has reported
    memory peaks (one without tasks reports none) and the clock has passed ``not_before``."""
    while True:
        executors = [e for e in client.get("allexecutors") if e.get("id") != "driver"]
        missing = [e for e in executors if e.get("totalTasks", 0) > 0 and not e.get("peakMemoryMetrics")]
        if not missing and time.monotonic() >= not_before:
            return executors
        if time.monotonic() > deadline:
            return executors  # peaks may be partial: recorded as they are
        time.sleep(0.1)  # poll interval; the loop ends on the condition or the deadline


def interval_union_s(intervals: Iterable[Tuple[float, float]]) -> float:
    """Total length of the union of ``(start, end)`` intervals (concurrent stages count once)."""
    total, current_start, current_end = 0.0, None, None
    for start, end in sorted(intervals):
        if current_end is None or start > current_end:
            if current_end is not None:
                total += current_end - current_start
            current_start, current_end = start, end
        else:
            current_end = max(current_end, end)
    if current_end is not None:
        total += current_end - current_start
    return total


def stage_kind(stage: dict) -> str:
    """ "reduce" for a stage that read shuffle data, "map" for one that only wrote it, else "other"."""
    read = (stage.get("shuffleReadBytes") or 0) + (stage.get("shuffleReadRecords") or 0)
    if read > 0:
        return "reduce"
    if (stage.get("shuffleWriteBytes") or 0) > 0 or (stage.get("shuffleWriteRecords") or 0) > 0:
        return "map"
    return "other"


def task_read_bytes(task: dict) -> int:
    read = (task.get("taskMetrics") or {}).get("shuffleReadMetrics") or {}
    return int(read.get("remoteBytesRead", 0)) + int(read.get("localBytesRead", 0))


def task_fetch_wait_ms(task: dict) -> int:
    read = (task.get("taskMetrics") or {}).get("shuffleReadMetrics") or {}
    return int(read.get("fetchWaitTime", 0))


def summarize(
    stages: List[dict], tasks: Dict[Tuple[int, int], List[dict]], executors: List[dict]
) -> Dict[str, Any]:
    """The run record's Spark numbers from REST data: ``stages`` (StageData of the workload's
    stages, all attempts), ``tasks`` ((stage id, attempt) -> TaskData of stages that read shuffle
    data) and ``executors`` (ExecutorSummary, the driver excluded)."""
    ran = [s for s in stages if s.get("status") in ("COMPLETE", "FAILED") and s.get("submissionTime")]
    spans: Dict[str, List[Tuple[float, float]]] = {"map": [], "reduce": [], "other": []}
    task_s = {"map": 0.0, "reduce": 0.0, "other": 0.0}
    # Executor CPU and GC time of the tasks (Spark's executorCpuTime, ns; jvmGcTime, ms): the task
    # threads only, not the executor's other threads (Netty, the plugin's pusher and owners).
    cpu_s = {"map": 0.0, "reduce": 0.0, "other": 0.0}
    gc_s = {"map": 0.0, "reduce": 0.0, "other": 0.0}
    stage_rows = []
    for stage in ran:
        kind = stage_kind(stage)
        start, end = parse_time(stage.get("submissionTime")), parse_time(stage.get("completionTime"))
        if start is not None and end is not None:
            spans[kind].append((start, end))
        task_s[kind] += (stage.get("executorRunTime") or 0) / 1000.0
        cpu_s[kind] += (stage.get("executorCpuTime") or 0) / 1e9
        gc_s[kind] += (stage.get("jvmGcTime") or 0) / 1000.0
        stage_rows.append(
            {
                "stage": stage["stageId"],
                "attempt": stage.get("attemptId", 0),
                "status": stage.get("status"),
                "kind": kind,
                "tasks": stage.get("numTasks"),
                "completed": stage.get("numCompleteTasks", 0),
                "failed": (stage.get("numFailedTasks") or 0) + (stage.get("numKilledTasks") or 0),
                "duration_s": None if start is None or end is None else round(end - start, 3),
                "executor_run_s": (stage.get("executorRunTime") or 0) / 1000.0,
                "executor_cpu_s": round((stage.get("executorCpuTime") or 0) / 1e9, 3),
                "gc_s": (stage.get("jvmGcTime") or 0) / 1000.0,
                "shuffle_write_bytes": stage.get("shuffleWriteBytes", 0),
                "shuffle_read_bytes": stage.get("shuffleReadBytes", 0),
            }
        )
    read_tasks = [t for key, ts in tasks.items() for t in ts]
    ok_read_tasks = [t for t in read_tasks if t.get("status") == "SUCCESS"]
    peaks = {}
    memory_peaks = {}
    for executor in executors:
        metrics = executor.get("peakMemoryMetrics") or {}
        if metrics:
            peaks[executor["id"]] = int(metrics.get("JVMHeapMemory", 0)) + int(
                metrics.get("JVMOffHeapMemory", 0)
            )
            memory_peaks[executor["id"]] = {
                "heap_peak_bytes": int(metrics.get("JVMHeapMemory", 0)),
                # Reported where spark.executor.processTreeMetrics.enabled (the harness sets it).
                "rss_peak_bytes": int(metrics.get("ProcessTreeJVMRSSMemory", 0)) or None,
            }
    return {
        "spans": {
            kind: [min(a for a, _ in ranges), max(b for _, b in ranges)]
            for kind, ranges in spans.items()
            if ranges
        },
        "map_stage_s": round(interval_union_s(spans["map"]), 3),
        "reduce_stage_s": round(interval_union_s(spans["reduce"]), 3),
        "map_task_s": round(task_s["map"], 3),
        "reduce_task_s": round(task_s["reduce"], 3),
        "map_cpu_s": round(cpu_s["map"], 3),
        "reduce_cpu_s": round(cpu_s["reduce"], 3),
        "map_gc_s": round(gc_s["map"], 3),
        "reduce_gc_s": round(gc_s["reduce"], 3),
        "shuffle_write_bytes": sum(int(s.get("shuffleWriteBytes") or 0) for s in ran),
        "shuffle_read_bytes": sum(int(s.get("shuffleReadBytes") or 0) for s in ran),
        "shuffle_read_records": sum(int(s.get("shuffleReadRecords") or 0) for s in ran),
        "spark_fetch_wait_ms": sum(task_fetch_wait_ms(t) for t in read_tasks),
        "max_reduce_partition_bytes": max((task_read_bytes(t) for t in ok_read_tasks), default=0),
        "reduce_tasks_ok": len(ok_read_tasks),
        **tasks_rerun(stage_rows),
        "peak_executor_memory_bytes": max(peaks.values()) if peaks else None,
        "memory_peak_by_executor": peaks,
        "executor_memory_peaks": memory_peaks,
        "stages": sorted(stage_rows, key=lambda r: (r["stage"], r["attempt"])),
    }


def tasks_rerun(stage_rows: List[Dict[str, Any]]) -> Dict[str, int]:
    """Map tasks that ran again (completed in all attempts of the map stages, less each stage's
    tasks in its first attempt) and reduce task attempts that failed or were killed (each runs
    again), from :func:`summarize`'s stage rows."""
    maps = sorted((r for r in stage_rows if r["kind"] == "map"), key=lambda r: (r["stage"], r["attempt"]))
    first: Dict[int, Dict[str, Any]] = {}
    for row in maps:
        first.setdefault(row["stage"], row)
    return {
        "map_tasks_rerun": sum(r["completed"] for r in maps)
        - sum(int(r["tasks"] or 0) for r in first.values()),
        "reduce_tasks_rerun": sum(r["failed"] for r in stage_rows if r["kind"] == "reduce"),
    }


def stage_executor_peaks(client: RestClient, stages: List[dict]) -> List[dict]:
    """Executors as :func:`summarize` reads them, with only the memory peaks they reported while
    ``stages`` ran (each the largest over the stages): a warm run's own, not its application's,
    whose warm-up runs came first."""
    peaks: Dict[str, Dict[str, int]] = {}
    for stage in stages:
        if stage.get("status") not in ("COMPLETE", "FAILED"):
            continue
        detail = client.get(f"stages/{stage['stageId']}/{stage.get('attemptId', 0)}")
        for executor, summary in (detail.get("executorSummary") or {}).items():
            for name, value in (summary.get("peakMemoryMetrics") or {}).items():
                mine = peaks.setdefault(executor, {})
                mine[name] = max(mine.get(name, 0), int(value))
    return [{"id": executor, "peakMemoryMetrics": metrics} for executor, metrics in peaks.items()]


def collect(
    spark: Any,
    workload_ended: float,
    timeout: float = 60.0,
    group: str = WORKLOAD_GROUP,
    memory_of_stages: bool = False,
) -> Dict[str, Any]:
    """Run the fence job, wait for the REST data to be final and :func:`summarize` the stages of
    the jobs in ``group``. ``workload_ended`` is ``time.monotonic()`` at its end. Memory peaks
    are the executors' over the application, or with ``memory_of_stages`` over those stages."""
    sc = spark.sparkContext
    if not sc.uiWebUrl:
        raise RuntimeError("the Spark UI is off (spark.ui.enabled=false): no REST API to read metrics from")
    client = RestClient(sc.uiWebUrl, sc.applicationId)
    run_fence(spark)
    deadline = time.monotonic() + timeout
    jobs = wait_for_fence(client, deadline)
    stage_ids = {s for j in jobs if j.get("jobGroup") == group for s in j.get("stageIds", [])}
    stages = [s for s in client.get("stages") if s["stageId"] in stage_ids]
    pending = [s for s in stages if s.get("status") not in DONE_STAGE]
    if pending:
        raise RuntimeError(f"stages {sorted(s['stageId'] for s in pending)} of the workload are not finished")
    tasks: Dict[Tuple[int, int], List[dict]] = {}
    for stage in stages:
        if stage.get("status") in ("COMPLETE", "FAILED") and stage_kind(stage) == "reduce":
            key = (stage["stageId"], stage.get("attemptId", 0))
            length = int(stage.get("numTasks") or 0) * 4 + 100  # retries and speculation included
            tasks[key] = client.get(f"stages/{key[0]}/{key[1]}/taskList?offset=0&length={length}")
    heartbeat_s = heartbeat_interval_s(sc.getConf().get("spark.executor.heartbeatInterval", "10s"))
    executors = wait_for_executor_peaks(client, workload_ended + 2 * heartbeat_s, deadline)
    if memory_of_stages:
        executors = stage_executor_peaks(client, stages)
    summary = summarize(stages, tasks, executors)
    summary["jobs"] = sorted(j["jobId"] for j in jobs if j.get("jobGroup") == group)
    return summary


def heartbeat_interval_s(text: str) -> float:
    """Seconds of a Spark time string ("500ms", "1s", "10" = seconds)."""
    text = text.strip().lower()
    for suffix, factor in (
        ("ms", 0.001),
        ("us", 1e-6),
        ("s", 1.0),
        ("min", 60.0),
        ("m", 60.0),
        ("h", 3600.0),
    ):
        if text.endswith(suffix) and text[: -len(suffix)].strip().isdigit():
            return int(text[: -len(suffix)]) * factor
    return float(text)
