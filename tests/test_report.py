"""The skew report without a JVM: the Zipf fit, reading bench JSONs and event logs, the table
and the figures."""

import dataclasses
import json

import pytest
from bench_runs import bench_run

from pyspark_shuffle.report import cli, figure, zipf_exponent
from pyspark_shuffle.report.data import REPORT_EVENT, from_bench, from_event_log

REPORT = {
    "shuffleId": 3,
    "stageId": 7,
    "stageAttemptId": 0,
    "partitionBytes": [400, 100, 44, 25],
    "partitionBytesFrom": "reduce tasks",
    "bytesBySource": {"0": 300, "1": 269},
    "waitMsBySource": {"1": 1250.0},
    "tasks": [
        {
            "executorId": "0",
            "launchTime": 1000,
            "finishTime": 3000,
            "bytes": 300,
            "fetchWaitMs": 5,
            "limitMin": 1 << 20,
            "limitMax": 4 << 20,
            "limitMean": 2.5 * (1 << 20),
        },
        {
            "executorId": "1",
            "launchTime": 1500,
            "finishTime": 2500,
            "bytes": 269,
            "fetchWaitMs": 0,
            "limitMin": 4 << 20,
            "limitMax": 4 << 20,
            "limitMean": 4.0 * (1 << 20),
        },
    ],
    "tasksLeftOut": 0,
    "merged": {"chunks": 300, "files": 269, "at_owner": 100, "tasks": 2, "tasks_at_owner": 1},
    "remoteBytesBySource": {"0": 100, "1": 269},
    "rateBySource": {"0": 200.0, "1": 53.8},
    "hostBySource": {"0": "10.231.0.11", "1": "10.231.0.12"},
    "cpu": {
        "map": {"executor_cpu_s": 12.34, "jvm_gc_s": 0.5, "executor_run_s": 20.0, "tasks": 4},
        "reduce": {"executor_cpu_s": 3.21, "jvm_gc_s": 0.1, "executor_run_s": 5.0, "tasks": 2},
    },
}


@pytest.mark.parametrize("alpha", [0.5, 1.0, 2.0, 3.0])
def test_exact_zipf_sizes_give_their_exponent_back(alpha):
    sizes = [1e9 * r**-alpha for r in range(1, 65)]
    assert zipf_exponent(sizes) == pytest.approx(alpha, abs=1e-6)


def test_zipf_fit_of_uniform_and_degenerate_sizes():
    assert zipf_exponent([5] * 10) == 0.0
    assert zipf_exponent([]) == 0.0 and zipf_exponent([7]) == 0.0 and zipf_exponent([0, 0]) == 0.0
    # Order does not matter: sizes are ranked first.
    assert zipf_exponent([1, 8, 2, 4]) == pytest.approx(zipf_exponent([8, 4, 2, 1]))
    assert zipf_exponent([100, 0, 0, 0]) == 20.0


def test_event_log_reports_and_other_managers_stages(tmp_path):
    task = {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": 4,
        "Stage Attempt ID": 0,
        "Task Info": {"Index": 1},
        "Task Metrics": {"Shuffle Read Metrics": {"Remote Bytes Read": 30, "Local Bytes Read": 12}},
    }
    lines = [
        {"Event": "SparkListenerApplicationStart", "App ID": "app-1"},
        {"Event": REPORT_EVENT, **REPORT},
        task,
        dict(task, **{"Task Info": {"Index": 0}}),
        # A reduce task of a stage the plugin reported is not counted again.
        dict(task, **{"Stage ID": 7}),
        {"Event": "SparkListenerTaskEnd", "Stage ID": 5, "Task Info": {"Index": 0}, "Task Metrics": {}},
    ]
    log = tmp_path / "app-1"
    log.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    plugin, other = from_event_log(tmp_path)
    assert plugin.label == "app-1: shuffle 3, stage 7" and plugin.partition_bytes == [400, 100, 44, 25]
    assert plugin.merged == REPORT["merged"]
    assert other.partitions_from == "reduce tasks" and other.partition_bytes == [42, 42]
    assert other.label == "app-1: stage 4 (attempt 0), reduce tasks"


def test_zstd_event_logs_are_read_other_codecs_refused(tmp_path):
    import zstandard

    rolling = tmp_path / "eventlog_v2_app-2"
    rolling.mkdir()
    line = json.dumps({"Event": REPORT_EVENT, **REPORT}) + "\n"
    (rolling / "events_1_app-2.zstd").write_bytes(zstandard.ZstdCompressor().compress(line.encode()))
    (view,) = from_event_log(tmp_path)
    assert view.partition_bytes == REPORT["partitionBytes"]
    (tmp_path / "app-3.lz4").write_bytes(b"\x00")
    with pytest.raises(ValueError, match="codec=zstd"):
        from_event_log(tmp_path)


def test_bench_records_table_and_figures(tmp_path, capsys):
    record = bench_run(
        index=2,
        status="ok",
        workload="dummy",
        skew=2.0,
        manager="adaptive",
        shuffles=[REPORT],
        fetch_memory={"0": {"netty_pooled_bytes": 1 << 20}, "1": {"netty_pooled_bytes": 3 << 20}},
        links={
            str(w): {
                "rate_bps": 8000,
                "address": f"10.231.0.1{w}",
                "reduce": {"down_bytes": 100, "up_bytes": 300 * w},
            }
            for w in (1, 2)
        },
    )
    (view,) = from_bench([record, dataclasses.replace(record, status="failed")])
    # Source "1" on worker 2: 269 remote bytes at 53.8 B/s; its link carried 600 bytes at 1000 B/s.
    assert view.link_seconds_by_source == {"0": 0.5, "1": pytest.approx(5.0)}
    assert view.link_bound_s_by_source == {"0": 0.3, "1": 0.6}
    assert view.label == "run 2: dummy skew=2 adaptive, shuffle 3, stage 7"
    table = figure.format_table([view]).splitlines()
    assert table[0].split()[:4] == ["shuffle", "parts", "MiB", "max"]
    assert "0 (53%)" in table[2] and "1 (1.2 s)" in table[2] and "1.0-4.0" in table[2]
    # One of the two tasks that read chunks ran at its owner, which held a third of their bytes.
    assert "at owner" in table[0] and "1/2 (33%)" in table[2]
    # The executor whose Netty pool peaked highest.
    assert "3.0 (1)" in table[2]
    # Executor CPU seconds of the map stage and of the stage that read the shuffle.
    assert "CPU s map/reduce" in table[0] and " 12.3/3.2 " in table[2]
    assert view.cpu["map"]["tasks"] == 4
    assert table[2].endswith("1 (5.0 s, bound 0.6 s)")
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps({"env": {}, "runs": [record.to_json()]}))
    assert cli.main([str(bench), "--out", str(tmp_path / "png")]) == 0
    (png,) = (tmp_path / "png").glob("*.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out


def test_cli_says_when_there_is_nothing(tmp_path, capsys):
    (tmp_path / "empty").write_text("")
    assert cli.main([str(tmp_path / "empty"), "--no-plot"]) == 1
    assert cli.main([str(tmp_path / "missing")]) == 2
