"""Deriving a run's Spark numbers from REST API data (synthetic, no JVM)."""

import pytest

from pyspark_shuffle.bench.sparkmetrics import heartbeat_interval_s, interval_union_s, parse_time, summarize


def stage(sid, status, start, end, write=0, read=0, run_ms=1000, tasks=2):
    return {
        "stageId": sid,
        "attemptId": 0,
        "status": status,
        "numTasks": tasks,
        "numCompleteTasks": tasks if status == "COMPLETE" else 0,
        "submissionTime": f"2026-01-01T00:00:{start:06.3f}GMT",
        "completionTime": f"2026-01-01T00:00:{end:06.3f}GMT",
        "executorRunTime": run_ms,
        "shuffleWriteBytes": write,
        "shuffleReadBytes": read,
        "shuffleWriteRecords": 1 if write else 0,
        "shuffleReadRecords": 1 if read else 0,
    }


def task(remote, local, wait, status="SUCCESS"):
    return {
        "status": status,
        "taskMetrics": {
            "shuffleReadMetrics": {"remoteBytesRead": remote, "localBytesRead": local, "fetchWaitTime": wait}
        },
    }


def test_summarize_stages_tasks_executors():
    stages = [
        stage(0, "COMPLETE", 0, 4, write=1000),
        stage(1, "COMPLETE", 2, 6, write=500),  # concurrent map stage: the union counts once
        stage(2, "COMPLETE", 6, 9, read=1500, run_ms=2500),
        stage(3, "SKIPPED", 0, 0, write=7),
    ]
    stages[3]["submissionTime"] = None
    tasks = {(2, 0): [task(600, 100, 40), task(500, 300, 60), task(5000, 0, 7, status="FAILED")]}
    executors = [
        {"id": "0", "peakMemoryMetrics": {"JVMHeapMemory": 100, "JVMOffHeapMemory": 20}},
        {"id": "1", "peakMemoryMetrics": {"JVMHeapMemory": 90, "JVMOffHeapMemory": 50}},
        {"id": "2", "peakMemoryMetrics": None},
    ]
    s = summarize(stages, tasks, executors)
    assert s["map_stage_s"] == pytest.approx(6.0)
    assert s["reduce_stage_s"] == pytest.approx(3.0)
    assert s["map_task_s"] == pytest.approx(2.0) and s["reduce_task_s"] == pytest.approx(2.5)
    assert s["shuffle_write_bytes"] == 1500 and s["shuffle_read_bytes"] == 1500
    assert s["spark_fetch_wait_ms"] == 107  # every attempt waited
    assert s["max_reduce_partition_bytes"] == 800  # successful tasks only
    assert s["peak_executor_memory_bytes"] == 140
    assert s["memory_peak_by_executor"] == {"0": 120, "1": 140}
    assert [r["kind"] for r in s["stages"]] == ["map", "map", "reduce"]
    assert s["map_tasks_rerun"] == 0 and s["reduce_tasks_rerun"] == 0


def test_tasks_run_again_after_a_loss():
    # Map stage 0 ran 4 tasks, then 2 of them again in attempt 1; the reduce stage's first
    # attempt lost 2 tasks to the dead executor and 1 to a fetch failure, its second ran 3.
    again = dict(stage(0, "COMPLETE", 4, 5, write=100), attemptId=1, numCompleteTasks=2)
    failed = dict(stage(1, "FAILED", 2, 4, read=50, tasks=6), numCompleteTasks=3, numFailedTasks=3)
    retried = dict(stage(1, "COMPLETE", 5, 6, read=50, tasks=3), attemptId=1, numKilledTasks=0)
    stages = [stage(0, "COMPLETE", 0, 2, write=100, tasks=4), again, failed, retried]
    s = summarize(stages, {}, [])
    assert s["map_tasks_rerun"] == 2 and s["reduce_tasks_rerun"] == 3
    assert [(r["stage"], r["attempt"], r["completed"], r["failed"]) for r in s["stages"]] == [
        (0, 0, 4, 0),
        (0, 1, 2, 0),
        (1, 0, 3, 3),
        (1, 1, 3, 0),
    ]


def test_helpers():
    assert interval_union_s([(0, 2), (1, 3), (5, 6)]) == 4
    assert interval_union_s([]) == 0
    assert parse_time("1970-01-01T00:00:01.500GMT") == 1.5
    assert heartbeat_interval_s("500ms") == 0.5 and heartbeat_interval_s("10s") == 10
    assert heartbeat_interval_s("2") == 2.0
