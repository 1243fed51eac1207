"""``--plot``: median wall time and peak executor memory against skew, one line per manager."""

from __future__ import annotations

from typing import Sequence

from .report import Summary

INSTALL_HINT = "install the plot extra: pip install 'pyspark-shuffle[plot]' (or pip install matplotlib)"


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def require_matplotlib() -> None:
    """Raise :class:`PlotUnavailable` when matplotlib cannot be imported (checked before runs)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotUnavailable(f"--plot needs matplotlib, which is not installed; {INSTALL_HINT}") from None


def write_plot(summaries: Sequence[Summary], path: str) -> None:
    """A PNG with one row per workload: wall time (s) and peak executor memory (MiB) vs skew."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    workloads = list(dict.fromkeys(s.workload for s in summaries))
    managers = list(dict.fromkeys(s.manager for s in summaries))
    figure, axes = plt.subplots(len(workloads), 2, figsize=(11, 3.8 * len(workloads)), squeeze=False)
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
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=100)
    plt.close(figure)
