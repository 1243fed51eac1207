"""--plot writes a PNG (skipped without matplotlib)."""

import pytest
from bench_runs import bench_run

from pyspark_shuffle.bench.tables import summarize


def test_plot_writes_png(tmp_path):
    pytest.importorskip("matplotlib")
    from pyspark_shuffle.bench.plot import write_plot

    records = [
        bench_run(
            manager=m,
            workload=w,
            skew=s,
            status="ok",
            wall_s=1.0 + s,
            peak_executor_memory_bytes=(100 + 10 * s) * (1 << 20),
        )
        for w in ("dummy", "join")
        for s in (0, 1, 2)
        for m in ("sort", "adaptive")
    ]
    path = tmp_path / "bench.png"
    write_plot(summarize(records), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_missing_matplotlib_is_a_clear_error(monkeypatch):
    import sys

    from pyspark_shuffle.bench.plot import PlotUnavailable, require_matplotlib

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    with pytest.raises(PlotUnavailable, match=r"pyspark-shuffle\[plot\]"):
        require_matplotlib()
