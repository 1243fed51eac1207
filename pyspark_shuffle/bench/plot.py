"""``--plot``: median wall time and peak executor memory against skew, one line per manager, and
the skew report of each plugin configuration's first run (drawn by :mod:`pyspark_shuffle.report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence

from ..bench_run import BenchRun
from ..report import figure
from ..report.data import from_bench
from .tables import Summary

PlotUnavailable = figure.PlotUnavailable
require_matplotlib = figure.require_matplotlib


def write_plot(summaries: Sequence[Summary], path: str) -> None:
    """A PNG with one row per workload: wall time (s) and peak executor memory (MiB) vs skew."""
    plt = figure.pyplot()
    workloads = list(dict.fromkeys(s.workload for s in summaries))
    managers = list(dict.fromkeys(s.manager for s in summaries))
    fig, axes = plt.subplots(len(workloads), 2, figsize=(11, 3.8 * len(workloads)), squeeze=False)
    panels = (
        ("wall_s", 1.0, "median wall time (s)"),
        ("peak_executor_memory_bytes", float(1 << 20), "median peak executor memory (MiB)"),
    )
    for row, workload in enumerate(workloads):
        for column, (name, scale, label) in enumerate(panels):
            ax = axes[row][column]
            for manager in managers:
                points = sorted(
                    (s.skew, s.medians[name] / scale)
                    for s in summaries
                    if s.workload == workload and s.manager == manager and s.medians.get(name) is not None
                )
                if points:
                    ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=manager)
            ax.set_title(f"{workload}: {label}")
            ax.set_xlabel("skew (Zipf exponent)")
            ax.set_ylabel(label)
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)


def write_skew_reports(records: Sequence[BenchRun], path: str) -> List[str]:
    """The skew report PNGs of the first ok run of each (workload, skew, manager) that kept the
    plugin's reports, in the directory ``<path without .png>-shuffles``; their paths."""
    first: Dict[tuple, BenchRun] = {}
    for record in records:
        key = (record.workload, record.skew, record.manager)
        if record.ok and record.shuffles and key not in first:
            first[key] = record
    directory = str(Path(path).with_suffix("")) + "-shuffles"
    return figure.write(from_bench(first.values()), directory) if first else []
