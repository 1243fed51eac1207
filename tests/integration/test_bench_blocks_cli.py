import json
import subprocess
import sys

import pytest
from ab_conf import UCX_AVAILABLE

pytestmark = pytest.mark.integration


@pytest.mark.skipif(not UCX_AVAILABLE, reason="no UCX libraries: pip install 'pyspark-shuffle[ucx]'")
def test_blocks_benchmark_runs_pinned_and_reads_through_each_transport(tmp_path):
    out = tmp_path / "blocks.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pyspark_shuffle",
            "blocks",
            "--size",
            "8m",
            "--block-size",
            "256k",
            "--variants",
            "netty,ucx-shm",
            "--repeat",
            "1",
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "serving cpu s/GB" in done.stdout
    runs = json.loads(out.read_text())["runs"]
    by_variant = {r["variant"]: r for r in runs}
    assert set(by_variant) == {"netty", "ucx-shm"}
    for run in runs:
        assert run["bytes"] == run["maps"] * run["reducers"] * (256 << 10) > (7 << 20)
        assert run["map_executors"] == [run["serving"]]
        assert run["reduce_executors"] == [run["reading"]] != [run["serving"]]
    assert set(by_variant["netty"]["bytes_by_transport"]) == {"netty"}
    assert set(by_variant["ucx-shm"]["bytes_by_transport"]) == {"ucx"}
