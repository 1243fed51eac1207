"""``--plot``: median wall time and peak executor memory against skew, one line per manager; what
executors held over time (the bytes fetched and not yet consumed, the heap live after
collections), one line per manager; and the skew report of each plugin configuration's first run
(drawn by :mod:`pyspark_shuffle.report`)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional, Sequence

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


#: What :func:`write_held_plot` draws: the probe's field, its title.
HELD_PANELS = (
    ("buffered_bytes", "fetched, not yet consumed (MiB)"),
    ("live_heap_bytes", "heap live after collections (MiB)"),
)


def write_held_plot(records: Sequence[BenchRun], path: str) -> Optional[str]:
    """Per workload and skew, the first ok run of each manager: what its executors held together
    (each bucket's mean, summed over executors) against seconds since its reduce stage began, a
    panel per :data:`HELD_PANELS` field, in ``<path without .png>-held.png``; its path, or None
    where no run has the probe's series."""
    first: Dict[tuple, BenchRun] = {}
    for record in records:
        key = (record.workload, record.skew, record.manager)
        if record.ok and record.memory_series and record.spans.get("reduce") and key not in first:
            first[key] = record
    if not first:
        return None
    scenarios = list(dict.fromkeys((w, s) for w, s, _ in first))
    plt = figure.pyplot()
    fig, axes = plt.subplots(len(scenarios), 2, figsize=(11, 3.8 * len(scenarios)), squeeze=False)
    for row, (workload, skew) in enumerate(scenarios):
        for column, (field, label) in enumerate(HELD_PANELS):
            ax = axes[row][column]
            for (w, s, manager), record in first.items():
                if (w, s) == (workload, skew):
                    times, values = held_over_time(record, field)
                    ax.plot(times, [v / (1 << 20) for v in values], label=manager)
            ax.set_title(f"{workload} skew={skew:g}: {label}")
            ax.set_xlabel("seconds since the reduce stage began")
            ax.set_ylim(bottom=0)
            ax.grid(True, alpha=0.3)
            ax.legend()
    fig.tight_layout()
    out = str(Path(path).with_suffix("")) + "-held.png"
    fig.savefig(out, format="png", dpi=100)
    plt.close(fig)
    return out


def held_over_time(record: BenchRun, field: str) -> tuple:
    """Seconds since ``record``'s reduce stage began and, for each of its buckets, ``field``'s mean
    summed over the executors."""
    start = record.spans["reduce"][0]
    summed: Dict[int, float] = {}
    for series in record.memory_series.values():
        for at, value in zip(series.get("start_ms") or [], (series.get(field) or {}).get("mean") or []):
            summed[at] = summed.get(at, 0.0) + value
    ats = sorted(summed)
    return [at / 1000.0 - start for at in ats], [summed[at] for at in ats]
