"""metrics(spark) and bench results as pandas DataFrames with pyarrow-backed columns (no JVM)."""

import json

import pandas as pd
import pyarrow as pa

from pyspark_shuffle.frames import bench_frame, counters_frame, flatten


def test_flatten_nests_with_dots():
    assert flatten({"a": 1, "b": {"c": 2, "d": {"e": 3}}}) == {"a": 1, "b.c": 2, "b.d.e": 3}


def test_counters_frame_has_a_row_per_scope():
    metrics = {
        "application": {"reduce_tasks": 4, "bytes_by_source": {"0": 10, "1": 30}, "blocks_per_request": 1.5},
        "executors": {"1": {"reduce_tasks": 1, "bytes_by_source": {"0": 10}}, "0": {"reduce_tasks": 3}},
    }
    frame = counters_frame(metrics)
    assert list(frame["scope"]) == ["application", "0", "1"]
    assert list(frame["reduce_tasks"]) == [4, 3, 1]
    assert frame["bytes_by_source.1"].iloc[0] == 30 and pd.isna(frame["bytes_by_source.1"].iloc[1])
    assert isinstance(frame["reduce_tasks"].dtype, pd.ArrowDtype)
    assert str(frame["reduce_tasks"].dtype) == "int64[pyarrow]"


def test_bench_frame_from_a_json_file(tmp_path):
    run = {
        "index": 0,
        "repeat": 0,
        "workload": "dummy",
        "skew": 2.0,
        "manager": "adaptive",
        "manager_kind": "adaptive",
        "status": "ok",
        "wall_s": 5.5,
        "plugin": {"bytes_by_transport": {"netty": 7}},
        "links": {"1": {"rate_bps": 1}},
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"env": {}, "runs": [run, dict(run, index=1, status="failed")]}))
    frame = bench_frame(path)
    assert list(frame.columns[:6]) == ["index", "repeat", "workload", "skew", "manager", "status"]
    assert frame["plugin.bytes_by_transport.netty"].tolist() == [7, 7]
    assert "links.1.rate_bps" not in frame.columns
    assert frame["wall_s"].dtype == pd.ArrowDtype(pa.float64())
