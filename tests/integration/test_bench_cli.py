"""End to end: ``python -m pyspark_shuffle bench`` on a small local-cluster run."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_bench_sort_and_adaptive(tmp_path):
    out = tmp_path / "tmp.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyspark_shuffle",
            "bench",
            "--managers",
            "sort,adaptive",
            "--skew",
            "0",
            "--size",
            "16m",
            "--partition-size",
            "4m",
            "--repeat",
            "1",
            "--warmup",
            "1",
            "--json",
            str(out),
            "--plot",
            str(tmp_path / "tmp.png"),
            "--profile",
            str(tmp_path / "profiles"),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "vs sort" in done.stdout
    # --warmup: each run is its application's second; the first's figures print as cold.
    assert "cold wall s" in done.stdout, done.stdout
    # --profile: CPU by phase of the map and the reduce stages, sort's beside the plugin's, and
    # their flame graphs.
    assert "CPU seconds by phase, map stages: dummy skew=0" in done.stdout, done.stdout
    assert "CPU seconds by phase, reduce stages: dummy skew=0" in done.stdout, done.stdout
    page = (tmp_path / "profiles" / "dummy-skew0.html").read_text()
    assert page.count("<svg") >= 4 and "sort</b>" in page and "adaptive</b>" in page
    # --plot draws the skew report of each configuration's first run that kept the plugin's.
    assert list((tmp_path / "tmp-shuffles").glob("*.png")), sorted(p.name for p in tmp_path.iterdir())
    runs = json.loads(out.read_text())["runs"]
    assert [r["manager"] for r in runs] == ["sort", "adaptive"]
    assert all(r["status"] == "ok" for r in runs), [r["error"] for r in runs]
    for run in runs:
        assert run["shuffle_write_bytes"] > 0 and run["shuffle_read_bytes"] > 0
        assert run["max_reduce_partition_bytes"] > 0 and run["wall_s"] > 0
        # Spark's CPU seconds of the stages' tasks, and the profile's of every thread.
        assert run["map_cpu_s"] > 0 and run["reduce_cpu_s"] > 0
        profile = run["profile"]
        assert profile["unavailable"] == {} and profile["missing_last_segment"] == [], profile
        assert sum(profile["by_kind"]["map"].values()) > 0 and profile["by_kind"]["reduce"], profile
    sort, adaptive = runs
    # same data and the same map-side writer: the same bytes written, give or take framing
    assert (
        abs(sort["shuffle_write_bytes"] - adaptive["shuffle_write_bytes"])
        <= 0.02 * sort["shuffle_write_bytes"]
    )
    assert sort["result"] == adaptive["result"]
    assert sort["plugin"] == {}
    # The timed run's own: 16m in 4m partitions, four reduce tasks (the warm-up's four are not in).
    assert adaptive["plugin"] and adaptive["plugin"]["reduce_tasks"] == 4, adaptive["plugin"]
    assert sort["shuffles"] == [] and len(adaptive["shuffles"]) == 1, adaptive["shuffles"]
    for run in runs:
        cold = run["cold"]
        assert run["warmup"] == 1 and cold["wall_s"] > 0 and cold["map_cpu_s"] > 0, cold
        assert cold["result"] == run["result"]

    # The README's next step: the skew report of that JSON.
    report = subprocess.run(
        [sys.executable, "-m", "pyspark_shuffle", "report", str(out), "--no-plot"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    assert "skew=0 adaptive" in report.stdout, report.stdout


@pytest.mark.slow
def test_bench_sql_workloads(tmp_path):
    out = tmp_path / "sql.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyspark_shuffle",
            "bench",
            "--managers",
            "sort,adaptive",
            "--skew",
            "1",
            "--workload",
            "sql,coalesced",
            "--size",
            "8m",
            "--partition-size",
            "4m",
            "--repeat",
            "1",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = {(r["workload"], r["manager"]): r for r in json.loads(out.read_text())["runs"]}
    assert all(r["status"] == "ok" for r in runs.values()), [r["error"] for r in runs.values()]
    for workload in ("sql", "coalesced"):
        sort, adaptive = runs[(workload, "sort")], runs[(workload, "adaptive")]
        assert sort["result"] == adaptive["result"] and sort["result"]["fact_rows"] > 0
        # Both executors of local-cluster share the host: the bench reads host-locally there.
        assert set(adaptive["plugin"]["bytes_by_transport"]) == {"local", "host-local"}
    assert len(runs[("sql", "sort")]["result"]) == 6  # fact_rows and five queries
    # 2100 partitions of 2 map outputs, coalesced: one batch block per map output and task.
    coalesced = runs[("coalesced", "adaptive")]["plugin"]
    assert sum(coalesced["blocks_by_transport"].values()) <= 2 * coalesced["reduce_tasks"]
