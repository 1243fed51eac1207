"""The skew report's figures (one PNG per shuffle read) and its text table; matplotlib is
imported only to draw (the ``plot`` extra)."""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any, List, Sequence

from .._metrics import COMBINE
from .data import ShuffleView

MIB = float(1 << 20)
INSTALL_HINT = "install the plot extra: pip install 'pyspark-shuffle[plot]' (or pip install matplotlib)"


class PlotUnavailable(RuntimeError):
    """matplotlib is not installed."""


def require_matplotlib() -> None:
    """Raise :class:`PlotUnavailable` when matplotlib cannot be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotUnavailable(f"plots need matplotlib, which is not installed; {INSTALL_HINT}") from None


def pyplot() -> Any:
    """matplotlib.pyplot drawing to files (no display)."""
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _bars(ax: Any, values: dict, scale: float, title: str, unit: str) -> None:
    if not values:
        ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes)
    else:
        keys = sorted(values, key=lambda k: (len(k), k))
        ax.bar(keys, [values[k] / scale for k in keys])
    ax.set_title(title)
    ax.set_ylabel(unit)


def _link_times(ax: Any, view: ShuffleView) -> None:
    """Per source: remote bytes at the observed rate (bars) and, from a namespace-cluster bench,
    its link's bound (dots): the source whose link held the stage stands out."""
    estimated = view.link_seconds_by_source
    _bars(ax, estimated, 1.0, "link time per source: remote bytes / observed rate", "s")
    bounds = view.link_bound_s_by_source
    if estimated and bounds:
        keys = sorted(estimated, key=lambda k: (len(k), k))
        ax.plot(keys, [bounds.get(k, float("nan")) for k in keys], "ro", label="link bound")
        ax.legend()


def draw(view: ShuffleView, path: str) -> None:
    """The PNG of one shuffle read: sorted partition sizes with their Zipf fit, bytes and fetch
    wait per source executor, each reduce task's in-flight limit over the stage, how much of it
    came out of merged chunks (mode=push), and each source's link time."""
    plt = pyplot()
    figure, axes = plt.subplots(2, 4, figsize=(20, 8))
    figure.suptitle(view.label)
    sizes = sorted(view.partition_bytes, reverse=True)
    ax = axes[0][0]
    if sizes:
        ranks = range(1, len(sizes) + 1)
        ax.bar(ranks, [s / MIB for s in sizes], label=f"{view.partitions_from}")
        weights = [r**-view.alpha for r in ranks]
        ax.plot(
            ranks,
            [view.total_bytes * w / sum(weights) / MIB for w in weights],
            "r-",
            label=f"Zipf fit, alpha = {view.alpha:.2f}",
        )
        ax.legend()
    ax.set_title(f"reduce partitions by size ({len(sizes)}, {view.total_bytes / MIB:.1f} MiB)")
    ax.set_xlabel("rank")
    ax.set_ylabel("MiB")
    _bars(axes[0][1], view.bytes_by_source, MIB, "bytes read per source executor", "MiB")
    _bars(
        axes[0][2],
        {k: v / 1000.0 for k, v in view.wait_ms_by_source.items()},
        1.0,
        "fetch wait per source executor",
        "s",
    )
    ax = axes[1][0]
    if view.tasks:
        start = min(t["launchTime"] for t in view.tasks)
        for t in view.tasks:
            begin, end = (t["launchTime"] - start) / 1000.0, (t["finishTime"] - start) / 1000.0
            ax.plot([begin, end], [t["limitMean"] / MIB] * 2, "b-", alpha=0.6)
            ax.plot([end, end], [t["limitMin"] / MIB, t["limitMax"] / MIB], "k-", alpha=0.3)
        ax.set_xlabel("s since the first reduce task started")
    else:
        ax.text(0.5, 0.5, "not recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_title("in-flight limit per reduce task (mean; min to max at its end)")
    ax.set_ylabel("MiB")
    merged_bytes = {k: v for k, v in view.merged.items() if k in ("chunks", "files", "at_owner")}
    title = "read out of merged chunks (at their owner) and from files (mode=push)"
    _bars(axes[1][1], merged_bytes, MIB, title, "MiB")
    ax = axes[1][2]
    if view.tasks:
        by_executor: dict = {}
        for t in view.tasks:
            by_executor[t["executorId"]] = by_executor.get(t["executorId"], 0) + t["bytes"]
        _bars(ax, by_executor, MIB, "bytes read per reducing executor", "MiB")
    else:
        _bars(ax, {}, MIB, "bytes read per reducing executor", "MiB")
    _link_times(axes[0][3], view)
    axes[1][3].axis("off")
    figure.tight_layout()
    figure.savefig(path, format="png", dpi=90)
    plt.close(figure)


def file_name(view: ShuffleView) -> str:
    return re.sub(r"[^A-Za-z0-9.=-]+", "_", view.label).strip("_")[:150] + ".png"


def write(views: Sequence[ShuffleView], directory: str) -> List[str]:
    """One PNG per view in ``directory`` (created); their paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for view in views:
        path = str(out / file_name(view))
        draw(view, path)
        paths.append(path)
    return paths


def _mib(value: float) -> str:
    return f"{value / MIB:.1f}"


def _critical(view: ShuffleView) -> str:
    """The source whose link held the stage longest by the estimate, with its link bound
    where a namespace-cluster bench measured it."""
    estimated = view.link_seconds_by_source
    if not estimated:
        return "-"
    source, seconds = max(estimated.items(), key=lambda kv: kv[1])
    bound = view.link_bound_s_by_source.get(source)
    return f"{source} ({seconds:.1f} s" + (f", bound {bound:.1f} s)" if bound is not None else ")")


def _combined(view: ShuffleView) -> str:
    """Local reduction's ratio (records folded per combined record read), and the MiB of combined
    records read."""
    c = view.combine
    if not c.get(COMBINE.segments_read):
        return "-"
    return f"{c.get(COMBINE.combine_ratio, 0.0):.1f}x, {_mib(int(c.get(COMBINE.bytes_out, 0)))} MiB combined"


def _at_owner(view: ShuffleView) -> str:
    """mode=push: "<tasks at owner>/<tasks that read chunks> (<share of chunk bytes read at their
    owner>)"; "-" where no task read a chunk or the report predates these counts."""
    tasks, chunks = view.merged.get("tasks"), view.merged.get("chunks")
    if not tasks or not chunks:
        return "-"
    return f"{view.merged.get('tasks_at_owner', 0)}/{tasks} ({view.merged.get('at_owner', 0) / chunks:.0%})"


def _netty_peak(view: ShuffleView) -> str:
    """From a bench run: the largest peak of Netty's pooled direct memory over the executors,
    with the executor's id; "-" without the probe's figures."""
    peaks = {
        executor: m["netty_pooled_bytes"]
        for executor, m in view.fetch_memory_by_executor.items()
        if m.get("netty_pooled_bytes") is not None
    }
    if not peaks:
        return "-"
    executor = max(peaks, key=lambda e: peaks[e])
    return f"{_mib(peaks[executor])} ({executor})"


def _cpu(view: ShuffleView) -> str:
    """Executor CPU seconds of the shuffle's map stage and of the stages that read it,
    "<map>/<reduce>"; "-" where the report predates these figures."""
    if not view.cpu:
        return "-"
    return "/".join(f"{view.cpu.get(side, {}).get('executor_cpu_s', 0.0):.1f}" for side in ("map", "reduce"))


def format_table(views: Sequence[ShuffleView]) -> str:
    """One line per shuffle read: partitions, total and largest/median partition (MiB), the
    Zipf fit, the source executor that served most bytes and the one waited on longest, the
    in-flight limit's range, the bytes read out of merged chunks and from files (mode=push), the
    reduce tasks that read chunks at their owner and the share of the chunks' bytes they held, the
    largest peak of Netty's pooled direct memory over the run's executors (bench runs), what
    local reduction did (rows folded per combined row read, and the MiB of combined segments read
    against the MiB of the blocks they stood for), the executor CPU seconds of the shuffle's map
    stage and of the stages that read it, and the critical source: the
    one whose remote bytes take longest at the rate observed from it (with its link bound from
    a namespace-cluster bench)."""
    header = [
        "shuffle",
        "parts",
        "MiB",
        "max MiB",
        "median MiB",
        "alpha",
        "top source",
        "longest wait",
        "limit MiB",
        "chunks/files MiB",
        "at owner",
        "netty peak MiB",
        "combined",
        "CPU s map/reduce",
        "critical source",
    ]
    rows = []
    for v in views:
        sizes = v.partition_bytes or [0]
        top = max(v.bytes_by_source.items(), key=lambda kv: kv[1], default=None)
        wait = max(v.wait_ms_by_source.items(), key=lambda kv: kv[1], default=None)
        limits = [(t["limitMin"], t["limitMax"]) for t in v.tasks if t.get("limitMax")]
        rows.append(
            [
                v.label,
                str(len(v.partition_bytes)),
                _mib(v.total_bytes),
                _mib(max(sizes)),
                _mib(statistics.median(sizes)),
                f"{v.alpha:.2f}",
                f"{top[0]} ({top[1] / max(1, sum(v.bytes_by_source.values())):.0%})" if top else "-",
                f"{wait[0]} ({wait[1] / 1000.0:.1f} s)" if wait else "-",
                f"{_mib(min(lo for lo, _ in limits))}-{_mib(max(hi for _, hi in limits))}" if limits else "-",
                "/".join(_mib(v.merged.get(k, 0)) for k in ("chunks", "files")) if v.merged else "-",
                _at_owner(v),
                _netty_peak(v),
                _combined(v),
                _cpu(v),
                _critical(v),
            ]
        )
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    lines = [
        "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in [header, ["-" * w for w in widths]] + rows
    ]
    return "\n".join(lines)
