"""Medians per (workload, skew, manager), ratios to sort's wall time and the printed table."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .._metrics import COMBINE, FETCH
from ..bench_run import RUN_NUMBERS, BenchRun
from .config import SORT
from .links import job_bound_s, run_figures
from .runner import scenario

Key = Tuple[str, float, str]  # workload (with its kill point, if any), skew, manager label

#: One cell of a table row: its column's name, its alignment ("<" or ">") and its text. Each
#: table declares its columns where it fills them.
Cell = Tuple[str, str, str]


def left(column: str, text: str) -> Cell:
    return (column, "<", text)


def right(column: str, text: str) -> Cell:
    return (column, ">", text)


def _identity(workload: str, skew: float, manager: str) -> List[Cell]:
    return [left("workload", workload), right("skew", f"{skew:g}"), left("manager", manager)]


@dataclass
class Summary:
    workload: str
    skew: float
    manager: str
    runs: int
    ok: int
    medians: Dict[str, Optional[float]] = field(default_factory=dict)
    ratio_to_sort: Optional[float] = None  # median wall time / sort's, same workload and skew
    #: Median executor CPU seconds of the map and the reduce stages / sort's (same workload, skew).
    cpu_to_sort: Dict[str, Optional[float]] = field(default_factory=dict)
    #: ``--warmup``: medians of the cold runs' figures (the first run of each application), and
    #: their ratios to sort's cold ones; empty without warm-up runs.
    cold: Dict[str, Optional[float]] = field(default_factory=dict)
    cold_to_sort: Dict[str, Optional[float]] = field(default_factory=dict)


#: The cold figures the tables show beside the warm ones.
COLD_NUMBERS = ("wall_s", "map_cpu_s", "reduce_cpu_s")


def median(values: Iterable[Optional[float]]) -> Optional[float]:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def group_runs(records: Iterable[BenchRun]) -> Dict[Key, List[BenchRun]]:
    """Run records by (workload and kill point, skew, manager), in the order first seen."""
    groups: Dict[Key, List[BenchRun]] = {}
    for record in records:
        key = (scenario(record.workload, record.kill), float(record.skew), record.manager)
        groups.setdefault(key, []).append(record)
    return groups


def summarize(records: Sequence[BenchRun]) -> List[Summary]:
    """One :class:`Summary` per (workload, skew, manager), in the order first seen."""
    summaries = []
    for (workload, skew, manager), runs in group_runs(records).items():
        ok = [r for r in runs if r.ok]
        cold = [r.cold for r in ok if r.cold]
        summaries.append(
            Summary(
                workload,
                skew,
                manager,
                len(runs),
                len(ok),
                {name: median(getattr(r, name) for r in ok) for name in RUN_NUMBERS},
                cold={name: median(c.get(name) for c in cold) for name in COLD_NUMBERS} if cold else {},
            )
        )
    sort = {(s.workload, s.skew): s.medians for s in summaries if s.manager == SORT}
    sort_cold = {(s.workload, s.skew): s.cold for s in summaries if s.manager == SORT}
    for s in summaries:
        base_cold = sort_cold.get((s.workload, s.skew), {})
        s.cold_to_sort = {name: _over(s.cold[name], base_cold.get(name)) for name in s.cold}
        base = sort.get((s.workload, s.skew), {})
        s.ratio_to_sort = _over(s.medians["wall_s"], base.get("wall_s"))
        for name in ("map_cpu_s", "reduce_cpu_s"):
            s.cpu_to_sort[name] = _over(s.medians[name], base.get(name))
    order = {}
    for s in summaries:
        order.setdefault(s.workload, len(order))
    return sorted(summaries, key=lambda s: (order[s.workload], s.skew))


def result_mismatches(records: Sequence[BenchRun]) -> List[str]:
    """Descriptions of (workload, skew) whose ok runs returned different results: every run of
    the same data must give the same counts and checksum, whatever the manager."""
    seen: Dict[Tuple[str, float], Dict[str, List[str]]] = {}
    for r in records:
        if r.ok and r.result is not None:
            key = repr(sorted(r.result.items()))
            seen.setdefault((r.workload, float(r.skew)), {}).setdefault(key, []).append(r.manager)
    return [
        f"{workload} skew={skew:g}: {len(results)} different results "
        + "; ".join(f"{sorted(set(managers))}: {result}" for result, managers in results.items())
        for (workload, skew), results in seen.items()
        if len(results) > 1
    ]


def logs_summary(records: Sequence[BenchRun], shown: int = 3) -> str:
    """What every run's driver and executors logged that they should not have: a line when
    nothing, else each run's count and the first findings in full."""
    with_findings = [r for r in records if r.log_findings]
    if not with_findings:
        return f"Spark's logs: nothing found in {len(records)} runs (driver and every executor)"
    lines = [
        f"Spark's logs: {sum(len(r.log_findings) for r in with_findings)} finding(s) in "
        f"{len(with_findings)} of {len(records)} runs"
    ]
    for r in with_findings:
        lines.append(f"- run {r.index + 1} ({r.workload} {r.manager}): {len(r.log_findings)}")
    first = [finding for r in with_findings for finding in r.log_findings][:shown]
    return "\n".join(lines + [""] + first)


def _num(value: Optional[float], scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None else f"{value / scale:.{digits}f}"


def _over(value: Optional[float], bound: Optional[float]) -> Optional[float]:
    """``value / bound``; None where either is missing or the bound is zero."""
    return value / bound if value is not None and bound else None


def _times(value: Optional[float]) -> str:
    """A ratio as a table shows it ("1.07x"; "-" for none)."""
    return "-" if value is None else f"{value:.2f}x"


def _ratio(value: Optional[float], base: Optional[float]) -> str:
    """``value`` as a multiple of ``base`` ("1.07x"); "-" where either is missing or the base is
    zero."""
    return _times(_over(value, base))


def summary_cells(s: Summary) -> List[Cell]:
    """A row of the main table: medians over the ok runs, and each against sort's."""
    m = s.medians
    return _identity(s.workload, s.skew, s.manager) + [
        right("ok", f"{s.ok}/{s.runs}"),
        right("wall s", _num(m["wall_s"], digits=2)),
        right("vs sort", _times(s.ratio_to_sort)),
        right("map s", _num(m["map_stage_s"], digits=2)),
        right("reduce s", _num(m["reduce_stage_s"], digits=2)),
        right("map CPU s", _num(m["map_cpu_s"], digits=2)),
        right("vs sort", _times(s.cpu_to_sort.get("map_cpu_s"))),
        right("reduce CPU s", _num(m["reduce_cpu_s"], digits=2)),
        right("vs sort", _times(s.cpu_to_sort.get("reduce_cpu_s"))),
        right("write MiB", _num(m["shuffle_write_bytes"], 1 << 20)),
        right("max part MiB", _num(m["max_reduce_partition_bytes"], 1 << 20)),
        right("fetch wait s", _num(m["spark_fetch_wait_ms"], 1000.0, 2)),
        right("peak exec MiB", _num(m["peak_executor_memory_bytes"], 1 << 20, 0)),
    ]


def cold_cells(s: Summary) -> List[Cell]:
    """With ``--warmup``, the cold runs' figures beside the warm ones."""
    return [
        right("cold wall s", _num(s.cold.get("wall_s"), digits=2)),
        right("vs sort", _times(s.cold_to_sort.get("wall_s"))),
        right("cold map CPU s", _num(s.cold.get("map_cpu_s"), digits=2)),
        right("vs sort", _times(s.cold_to_sort.get("map_cpu_s"))),
    ]


def format_table(summaries: Sequence[Summary]) -> str:
    """A fixed-width table of medians over the ok runs; each ``vs sort`` is the manager's median
    (wall time, and the executor CPU seconds of the map and the reduce stages' tasks, Spark's
    executorCpuTime) divided by sort's for the same workload and skew. With warm-up runs
    (``--warmup``) the figures are the warm runs', and the cold runs' (each application's first)
    follow."""
    with_cold = any(s.cold for s in summaries)
    return format_rows([summary_cells(s) + (cold_cells(s) if with_cold else []) for s in summaries])


def network_table(records: Sequence[BenchRun]) -> Optional[str]:
    """Where the time and the bytes went on a namespace cluster, medians over the ok runs: stage
    times, fetch wait, the plugin's time-averaged buffered bytes, bytes the links carried to
    their workers during the map and the reduce stage, the reduce stage's mean and largest
    link utilisation, its link bound and each run's reduce stage as a multiple of its own bound;
    then the shape's job bound (links.job_bound_s, the least of its runs under any manager) and
    each manager's wall as a multiple of it. None when no run has link figures (local-cluster)."""
    if not any(r.links for r in records):
        return None
    ok = [r for r in records if r.ok]
    # One bound per shape, whichever manager's run gives it: what the shuffle must carry is the
    # same under any manager, and the least any run carried is the nearest to it that was seen
    # (a manager that carries bytes twice does not move its own bound away).
    bounds: Dict[tuple, float] = {}
    for r in ok:
        bound = job_bound_s(run_figures(r.links)["job_link_s"], r.map_task_s, r.num_partitions)
        if bound is not None:
            shape = (scenario(r.workload, r.kill), float(r.skew))
            bounds[shape] = min(bound, bounds.get(shape, bound))
    rows = []
    for (workload, skew, manager), runs in group_runs(ok).items():
        figures = [run_figures(r.links) for r in runs]
        bound = bounds.get((workload, skew))
        buffered = [r.plugin.get(FETCH.mean_buffered_bytes) for r in runs]
        reduce_over_bound = [_over(r.reduce_stage_s, f["reduce_bound_s"]) for r, f in zip(runs, figures)]
        rows.append(
            _identity(workload, skew, manager)
            + [
                right("map s", _num(median(r.map_stage_s for r in runs), digits=2)),
                right("reduce s", _num(median(r.reduce_stage_s for r in runs), digits=2)),
                right("fetch wait s", _num(median(r.spark_fetch_wait_ms for r in runs), 1000.0, 2)),
                right("buffered MiB", _num(median(buffered), 1 << 20)),
                right("link MiB map", _num(median(f["link_map_bytes"] for f in figures), 1 << 20, 0)),
                right("link MiB reduce", _num(median(f["link_reduce_bytes"] for f in figures), 1 << 20, 0)),
                right("reduce util mean", _num(median(f["reduce_util_mean"] for f in figures), digits=2)),
                right("reduce util max", _num(median(f["reduce_util_max"] for f in figures), digits=2)),
                right("link bound s", _num(median(f["reduce_bound_s"] for f in figures), digits=2)),
                right("reduce / bound", _num(median(reduce_over_bound), digits=2)),
                right("job bound s", _num(bound, digits=2)),
                right("wall / job bound", _num(median(_over(r.wall_s, bound) for r in runs), digits=2)),
            ]
        )
    return format_rows(rows)


def push_table(records: Sequence[BenchRun]) -> Optional[str]:
    """What mode="push" did, medians over the ok runs: bytes reduce tasks read out of merged
    chunks and their share of all bytes read, the share of the shuffles' bytes the owners had
    merged when the map stages ended (the driver's summaries), chunks read and blocks per chunk,
    requests to other executors, chunks whose blocks had to be read from their map outputs
    instead, bytes that crossed the network twice, and the share of the reduce tasks that read
    chunks at their partitions' owner and of the chunks' bytes they read there. None when no run
    read a merged chunk."""
    groups = group_runs(r for r in records if r.ok and r.plugin.get(FETCH.chunks_read))
    if not groups:
        return None
    rows = []
    for (workload, skew, manager), runs in groups.items():
        plugin = [r.plugin for r in runs]
        share = [
            p.get(FETCH.bytes_from_stores, 0) / sum(p[FETCH.bytes_by_transport].values())
            for p in plugin
            if sum((p.get(FETCH.bytes_by_transport) or {}).values())
        ]
        per_chunk = [p.get(FETCH.blocks_from_stores, 0) / p[FETCH.chunks_read] for p in plugin]
        by_map_end = [_merged_by_map_end(r.push) for r in runs]
        # Of the reduce tasks that read merged chunks, those that ran at their partitions' owner.
        at_owner = [
            p.get(FETCH.stored_reduce_tasks_on_owner, 0) / p[FETCH.stored_reduce_tasks]
            for p in plugin
            if p.get(FETCH.stored_reduce_tasks)
        ]
        # Of the bytes read out of chunks, those the reading task's own executor held.
        bytes_at_owner = [
            p.get(FETCH.bytes_at_owner, 0) / p[FETCH.bytes_from_stores]
            for p in plugin
            if p.get(FETCH.bytes_from_stores)
        ]
        rows.append(
            _identity(workload, skew, manager)
            + [
                right("merged MiB", _num(median(p.get(FETCH.bytes_from_stores) for p in plugin), 1 << 20)),
                right("merged share", _num(median(share), digits=2)),
                right("merged by map end", _num(median(s for s in by_map_end if s is not None), digits=2)),
                right("chunks", _num(median(p.get(FETCH.chunks_read) for p in plugin), digits=0)),
                right("blocks/chunk", _num(median(per_chunk), digits=1)),
                right("requests", _num(median(p.get(FETCH.requests) for p in plugin), digits=0)),
                right(
                    "chunk fallbacks", _num(median(p.get(FETCH.chunk_fallbacks) for p in plugin), digits=0)
                ),
                right(
                    "crossed twice MiB",
                    _num(median(p.get(FETCH.bytes_crossed_twice) for p in plugin), 1 << 20),
                ),
                right("tasks at owner", _num(median(at_owner), digits=2)),
                right("chunk bytes at owner", _num(median(bytes_at_owner), digits=2)),
            ]
        )
    return format_rows(rows)


def _medians(
    runs: Sequence[BenchRun], base: Sequence[BenchRun], value: Callable[[BenchRun], Optional[float]]
) -> Tuple[Optional[float], Optional[float]]:
    """The median of ``value`` over ``runs`` and over ``base`` (sort's runs)."""
    return median(value(r) for r in runs), median(value(r) for r in base)


def _sort_runs(groups: Dict[Key, List[BenchRun]]) -> Dict[Tuple[str, float], List[BenchRun]]:
    """Sort's runs of each (workload, skew) among ``groups``: the baseline of the ratios."""
    return {(w, s): runs for (w, s, m), runs in groups.items() if m == SORT}


def combine_table(records: Sequence[BenchRun]) -> Optional[str]:
    """What local reduction did against sort, medians over the ok runs of each (workload, skew,
    manager) that has a run with a combined read: wall, map and reduce stage (and their executor
    CPU seconds against sort's), the shuffle bytes reduce tasks read (and their ratio to sort's in
    the same workload and skew) and records, rows folded per combined row read, map outputs folded
    and those written whole (judging whether folding pays, or where it does not), and peak
    executor memory. Sort's rows are the baseline. None when no run read combined records."""

    def combined(r: BenchRun) -> bool:
        return bool((r.plugin.get("combine") or {}).get(COMBINE.segments_read))

    shown = {(r.workload, float(r.skew)) for r in records if r.ok and combined(r)}
    if not shown:
        return None
    groups = group_runs(r for r in records if r.ok and (r.workload, float(r.skew)) in shown)
    sort = _sort_runs(groups)
    rows = []
    for (workload, skew, manager), runs in groups.items():
        base = sort.get((workload, skew), [])

        wall, base_wall = _medians(runs, base, lambda r: r.wall_s)
        read, base_read = _medians(runs, base, lambda r: r.shuffle_read_bytes)
        combine = [r.plugin.get("combine") or {} for r in runs]
        rows.append(
            _identity(workload, skew, manager)
            + [
                right("wall s", _num(wall, digits=2)),
                right("vs sort", _ratio(wall, base_wall)),
                right("map s", _num(median(r.map_stage_s for r in runs), digits=2)),
                right("reduce s", _num(median(r.reduce_stage_s for r in runs), digits=2)),
                right("map CPU vs sort", _ratio(*_medians(runs, base, lambda r: r.map_cpu_s))),
                right("reduce CPU vs sort", _ratio(*_medians(runs, base, lambda r: r.reduce_cpu_s))),
                right("read MiB", _num(read, 1 << 20)),
                right("read vs sort", _ratio(read, base_read)),
                right("read records", _num(median(r.shuffle_read_records for r in runs), digits=0)),
                right(
                    "combine ratio",
                    _num(median(c.get(COMBINE.combine_ratio) for c in combine if c), digits=1),
                ),
                right(
                    "maps folded", _num(median(c.get(COMBINE.maps_folded) for c in combine if c), digits=0)
                ),
                right(
                    "maps not folded",
                    _num(median(c.get(COMBINE.maps_not_folded) for c in combine if c), digits=0),
                ),
                right("peak exec MiB", _num(median(r.peak_executor_memory_bytes for r in runs), 1 << 20, 0)),
            ]
        )
    return format_rows(rows)


def _executor_peak(record: BenchRun, field: str) -> Optional[float]:
    """The largest of one run's executors' ``fetch_memory`` peaks of ``field`` (None: none)."""
    values = [e.get(field) for e in record.fetch_memory.values() if e.get(field) is not None]
    return max(values) if values else None


def _largest(field: str) -> Callable[[BenchRun], Optional[float]]:
    """A run's largest ``fetch_memory`` figure of ``field`` over its executors."""
    return lambda record: _executor_peak(record, field)


def _out_of_memory_retries(record: BenchRun) -> Optional[int]:
    """How often one run's reads ran out of Netty's memory, over its executors: episodes of
    Spark's fetcher (sort's reads) plus blocks the plugin's fetcher deferred (None: no figure)."""
    counts = [
        e.get(field)
        for e in record.fetch_memory.values()
        for field in ("netty_oom_episodes", "plugin_oom_deferrals")
        if e.get(field) is not None
    ]
    return sum(counts) if counts else None


def held_memory_table(records: Sequence[BenchRun]) -> Optional[str]:
    """What executors held over the reduce stage, medians over the ok runs of the executor that
    held most (bench/held.py): the time-weighted mean of the bytes buffered where fetched blocks
    arrive (fetched and not yet consumed, under either manager alike) and its peak; the mean of
    the heap live after collections and its peak; the mean of direct memory and of RSS; each mean
    beside its ratio to sort's in the same workload and skew. None when no run has the probe's
    series."""
    groups = group_runs(r for r in records if r.ok and _executor_peak(r, "buffered_mean_bytes") is not None)
    if not groups:
        return None
    sort = _sort_runs(groups)
    rows = []
    for (workload, skew, manager), runs in groups.items():
        base = sort.get((workload, skew), [])

        wall, base_wall = median(r.wall_s for r in runs), median(r.wall_s for r in base)
        buffered, base_buffered = _medians(runs, base, _largest("buffered_mean_bytes"))
        live, base_live = _medians(runs, base, _largest("live_heap_mean_bytes"))
        rss, base_rss = _medians(runs, base, _largest("rss_mean_bytes"))
        rows.append(
            _identity(workload, skew, manager)
            + [
                right("wall s", _num(wall, digits=2)),
                right("vs sort", _ratio(wall, base_wall)),
                right("buffered MiB", _num(buffered, 1 << 20)),
                right("vs sort", _ratio(buffered, base_buffered)),
                right("peak", _num(median(_largest("buffered_peak_bytes")(r) for r in runs), 1 << 20)),
                right("live heap MiB", _num(live, 1 << 20, 0)),
                right("vs sort", _ratio(live, base_live)),
                right("peak", _num(median(_largest("live_heap_peak_bytes")(r) for r in runs), 1 << 20, 0)),
                right("direct MiB", _num(median(_largest("direct_mean_bytes")(r) for r in runs), 1 << 20)),
                right("RSS MiB", _num(rss, 1 << 20, 0)),
                right("vs sort", _ratio(rss, base_rss)),
            ]
        )
    return format_rows(rows)


def memory_table(records: Sequence[BenchRun]) -> Optional[str]:
    """The memory shuffle reads held, medians over the ok runs of the peak of the executor that
    held most: Netty's pooled direct memory (and its ratio to sort's in the same workload and
    skew), all of Netty's direct memory, what the plugin's reduce tasks held against the
    executor's fetch budget and what its local reduction held, the executor's RSS and heap
    peaks (and their ratios to sort's) and mode=push's merge store's peak over the reduce stage;
    beside the wall time, the times reads ran out of Netty's
    memory and the tasks that ran again. None when no run has the probe's figures."""
    groups = group_runs(r for r in records if r.ok and r.fetch_memory)
    if not groups:
        return None
    sort = _sort_runs(groups)
    rows = []
    for (workload, skew, manager), runs in groups.items():
        base = sort.get((workload, skew), [])

        wall, base_wall = median(r.wall_s for r in runs), median(r.wall_s for r in base)
        pooled, base_pooled = _medians(runs, base, _largest("netty_pooled_bytes"))
        rss, base_rss = _medians(runs, base, _largest("rss_peak_bytes"))
        heap, base_heap = _medians(runs, base, _largest("heap_peak_bytes"))
        rerun = median((r.map_tasks_rerun or 0) + (r.reduce_tasks_rerun or 0) for r in runs)
        rows.append(
            _identity(workload, skew, manager)
            + [
                right("wall s", _num(wall, digits=2)),
                right("vs sort", _ratio(wall, base_wall)),
                right("netty pooled MiB", _num(pooled, 1 << 20)),
                right("vs sort", _ratio(pooled, base_pooled)),
                right(
                    "netty direct MiB",
                    _num(median(_executor_peak(r, "netty_direct_bytes") for r in runs), 1 << 20),
                ),
                right(
                    "plugin held MiB",
                    _num(median(_executor_peak(r, "plugin_fetch_bytes") for r in runs), 1 << 20),
                ),
                right(
                    "combine held MiB",
                    _num(median(_executor_peak(r, "plugin_combine_bytes") for r in runs), 1 << 20),
                ),
                right("RSS MiB", _num(rss, 1 << 20, 0)),
                right("vs sort", _ratio(rss, base_rss)),
                right("heap MiB", _num(heap, 1 << 20, 0)),
                right("vs sort", _ratio(heap, base_heap)),
                right(
                    "store MiB", _num(median(_executor_peak(r, "store_peak_bytes") for r in runs), 1 << 20)
                ),
                right("OOM retries", _num(median(_out_of_memory_retries(r) for r in runs), digits=0)),
                right("tasks rerun", _num(rerun, digits=0)),
            ]
        )
    return format_rows(rows)


def kill_table(records: Sequence[BenchRun]) -> Optional[str]:
    """What each ``--kill`` cost, medians over the ok runs: the wall time, as a multiple of the
    same manager's median without a kill (same workload and skew, when the benchmark ran one),
    when in the workload the executor was killed, the map tasks that ran again and the reduce
    task attempts that failed or were killed. None when no run killed an executor."""
    ok = [r for r in records if r.ok]
    if not any(r.kill for r in ok):
        return None
    # Without a kill, a scenario's name is its workload's.
    no_kill_wall = {
        key: median(r.wall_s for r in runs) for key, runs in group_runs(r for r in ok if not r.kill).items()
    }
    rows = []
    for (name, skew, manager), runs in group_runs(r for r in ok if r.kill).items():
        wall = median(r.wall_s for r in runs)
        rows.append(
            _identity(name, skew, manager)
            + [
                right("wall s", _num(wall, digits=2)),
                right("vs no kill", _ratio(wall, no_kill_wall.get((runs[0].workload, skew, manager)))),
                right("killed at s", _num(median((r.fault or {}).get("at_s") for r in runs), digits=1)),
                right("maps rerun", _num(median(r.map_tasks_rerun for r in runs), digits=0)),
                right("reduce tasks rerun", _num(median(r.reduce_tasks_rerun for r in runs), digits=0)),
            ]
        )
    return format_rows(rows)


def _merged_by_map_end(summaries: Dict[str, Any]) -> Optional[float]:
    """Merged bytes over shuffle bytes, over every shuffle summary of one run (None: none)."""
    total = sum(s.get("shuffle_bytes", 0) for s in summaries.values())
    return sum(s.get("merged_bytes", 0) for s in summaries.values()) / total if total else None


def format_rows(rows: Sequence[Sequence[Cell]]) -> str:
    """``rows`` of cells, fixed width, under the first row's column names ("" for no rows)."""
    if not rows:
        return ""
    return format_columns(
        [(name, align) for name, align, _ in rows[0]], [[text for _, _, text in row] for row in rows]
    )


def format_columns(columns: Sequence[Tuple[str, str]], rows: List[List[str]]) -> str:
    """``rows`` under ``columns`` ((name, "<" or ">") each), fixed width."""
    header = [name for name, _ in columns]
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]

    def line(cells: List[str]) -> str:
        return "  ".join(
            cell.ljust(width) if align == "<" else cell.rjust(width)
            for cell, width, (_, align) in zip(cells, widths, columns)
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(row) for row in rows])
