"""End to end: ``python -m pyspark_shuffle bench`` on a small local-cluster run."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_bench_sort_and_adaptive(tmp_path):
    out = tmp_path / "tmp.json"
    done = subprocess.run(
        [sys.executable, "-m", "pyspark_shuffle", "bench", "--managers", "sort,adaptive", "--skew", "0",
         "--size", "16m", "--partition-size", "4m", "--repeat", "1", "--json", str(out)],
        capture_output=True, text=True, timeout=1200,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "vs sort" in done.stdout
    runs = json.loads(out.read_text())["runs"]
    assert [r["manager"] for r in runs] == ["sort", "adaptive"]
    assert all(r["status"] == "ok" for r in runs), [r["error"] for r in runs]
    for run in runs:
        assert run["shuffle_write_bytes"] > 0 and run["shuffle_read_bytes"] > 0
        assert run["max_reduce_partition_bytes"] > 0 and run["wall_s"] > 0
    sort, adaptive = runs
    # same data and the same map-side writer: the same bytes written, give or take framing
    assert abs(sort["shuffle_write_bytes"] - adaptive["shuffle_write_bytes"]) <= 0.02 * sort["shuffle_write_bytes"]
    assert sort["result"] == adaptive["result"]
    assert sort["plugin"] == {}
    assert adaptive["plugin"] and adaptive["plugin"]["reduce_tasks"] > 0
