"""Medians per (workload, skew, manager), ratios to sort's wall time and the printed table."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .._metrics import COMBINE, FETCH
from ..frames import RUN_NUMBERS
from .config import SORT
from .links import run_figures
from .runner import scenario

Key = Tuple[str, float, str]  # workload (with its kill point, if any), skew, manager label


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


def group_runs(records: Iterable[Dict[str, Any]]) -> Dict[Key, List[Dict[str, Any]]]:
    """Run records by (workload and kill point, skew, manager), in the order first seen."""
    groups: Dict[Key, List[Dict[str, Any]]] = {}
    for record in records:
        key = (scenario(record["workload"], record.get("kill")), float(record["skew"]), record["manager"])
        groups.setdefault(key, []).append(record)
    return groups


def summarize(records: Sequence[Dict[str, Any]]) -> List[Summary]:
    """One :class:`Summary` per (workload, skew, manager), in the order first seen."""
    summaries = []
    for (workload, skew, manager), runs in group_runs(records).items():
        ok = [r for r in runs if r.get("status") == "ok"]
        cold = [r["cold"] for r in ok if r.get("cold")]
        summaries.append(
            Summary(
                workload,
                skew,
                manager,
                len(runs),
                len(ok),
                {name: median(r.get(name) for r in ok) for name in RUN_NUMBERS},
                cold={name: median(c.get(name) for c in cold) for name in COLD_NUMBERS} if cold else {},
            )
        )
    sort = {(s.workload, s.skew): s.medians for s in summaries if s.manager == SORT}
    sort_cold = {(s.workload, s.skew): s.cold for s in summaries if s.manager == SORT}
    for s in summaries:
        base_cold = sort_cold.get((s.workload, s.skew), {})
        s.cold_to_sort = {
            name: _over(s.cold[name], base_cold.get(name)) if s.cold.get(name) is not None else None
            for name in s.cold
        }
        base = sort.get((s.workload, s.skew), {})
        if base.get("wall_s") and s.medians["wall_s"] is not None:
            s.ratio_to_sort = s.medians["wall_s"] / base["wall_s"]
        for name in ("map_cpu_s", "reduce_cpu_s"):
            value = s.medians[name]
            s.cpu_to_sort[name] = value / base[name] if base.get(name) and value is not None else None
    order = {}
    for s in summaries:
        order.setdefault(s.workload, len(order))
    return sorted(summaries, key=lambda s: (order[s.workload], s.skew))


def result_mismatches(records: Sequence[Dict[str, Any]]) -> List[str]:
    """Descriptions of (workload, skew) whose ok runs returned different results: every run of
    the same data must give the same counts and checksum, whatever the manager."""
    seen: Dict[Tuple[str, float], Dict[str, List[str]]] = {}
    for r in records:
        if r.get("status") == "ok" and r.get("result") is not None:
            key = repr(sorted(r["result"].items()))
            seen.setdefault((r["workload"], float(r["skew"])), {}).setdefault(key, []).append(r["manager"])
    return [
        f"{workload} skew={skew:g}: {len(results)} different results "
        + "; ".join(f"{sorted(set(managers))}: {result}" for result, managers in results.items())
        for (workload, skew), results in seen.items()
        if len(results) > 1
    ]


def logs_summary(records: Sequence[Dict[str, Any]], shown: int = 3) -> str:
    """What every run's driver and executors logged that they should not have: a line when
    nothing, else each run's count and the first findings in full."""
    with_findings = [r for r in records if r.get("log_findings")]
    if not with_findings:
        return f"Spark's logs: nothing found in {len(records)} runs (driver and every executor)"
    lines = [
        f"Spark's logs: {sum(len(r['log_findings']) for r in with_findings)} finding(s) in "
        f"{len(with_findings)} of {len(records)} runs"
    ]
    for r in with_findings:
        lines.append(f"- run {r['index'] + 1} ({r['workload']} {r['manager']}): {len(r['log_findings'])}")
    first = [finding for r in with_findings for finding in r["log_findings"]][:shown]
    return "\n".join(lines + [""] + first)


def _num(value: Optional[float], scale: float = 1.0, digits: int = 1) -> str:
    return "-" if value is None else f"{value / scale:.{digits}f}"


def _ratio(value: Optional[float], base: Optional[float]) -> str:
    """``value`` as a multiple of ``base`` ("1.07x"); "-" where either is missing or the base is
    zero."""
    return "-" if value is None or not base else f"{value / base:.2f}x"


COLUMNS = (
    ("workload", "<"),
    ("skew", ">"),
    ("manager", "<"),
    ("ok", ">"),
    ("wall s", ">"),
    ("vs sort", ">"),
    ("map s", ">"),
    ("reduce s", ">"),
    ("map CPU s", ">"),
    ("vs sort", ">"),
    ("reduce CPU s", ">"),
    ("vs sort", ">"),
    ("write MiB", ">"),
    ("max part MiB", ">"),
    ("fetch wait s", ">"),
    ("peak exec MiB", ">"),
)


def table_rows(summaries: Sequence[Summary]) -> List[List[str]]:
    rows = []
    for s in summaries:
        m = s.medians
        rows.append(
            [
                s.workload,
                f"{s.skew:g}",
                s.manager,
                f"{s.ok}/{s.runs}",
                _num(m["wall_s"], digits=2),
                "-" if s.ratio_to_sort is None else f"{s.ratio_to_sort:.2f}x",
                _num(m["map_stage_s"], digits=2),
                _num(m["reduce_stage_s"], digits=2),
                _num(m["map_cpu_s"], digits=2),
                _cpu_ratio(s, "map_cpu_s"),
                _num(m["reduce_cpu_s"], digits=2),
                _cpu_ratio(s, "reduce_cpu_s"),
                _num(m["shuffle_write_bytes"], 1 << 20),
                _num(m["max_reduce_partition_bytes"], 1 << 20),
                _num(m["fetch_wait_ms"], 1000.0, 2),
                _num(m["peak_executor_memory_bytes"], 1 << 20, 0),
            ]
        )
    return rows


def _cpu_ratio(summary: Summary, name: str) -> str:
    ratio = summary.cpu_to_sort.get(name)
    return "-" if ratio is None else f"{ratio:.2f}x"


#: With ``--warmup``, the cold runs' figures beside the warm ones.
COLD_COLUMNS = (
    ("cold wall s", ">"),
    ("vs sort", ">"),
    ("cold map CPU s", ">"),
    ("vs sort", ">"),
)


def _cold_cells(s: Summary) -> List[str]:
    def ratio(name: str) -> str:
        value = s.cold_to_sort.get(name)
        return "-" if value is None else f"{value:.2f}x"

    return [
        _num(s.cold.get("wall_s"), digits=2),
        ratio("wall_s"),
        _num(s.cold.get("map_cpu_s"), digits=2),
        ratio("map_cpu_s"),
    ]


def format_table(summaries: Sequence[Summary]) -> str:
    """A fixed-width table of medians over the ok runs; each ``vs sort`` is the manager's median
    (wall time, and the executor CPU seconds of the map and the reduce stages' tasks, Spark's
    executorCpuTime) divided by sort's for the same workload and skew. With warm-up runs
    (``--warmup``) the figures are the warm runs', and the cold runs' (each application's first)
    follow."""
    rows = table_rows(summaries)
    if not any(s.cold for s in summaries):
        return format_columns(COLUMNS, rows)
    return format_columns(COLUMNS + COLD_COLUMNS, [row + _cold_cells(s) for row, s in zip(rows, summaries)])


NETWORK_COLUMNS = (
    ("workload", "<"),
    ("skew", ">"),
    ("manager", "<"),
    ("map s", ">"),
    ("reduce s", ">"),
    ("fetch wait s", ">"),
    ("buffered MiB", ">"),
    ("link MiB map", ">"),
    ("link MiB reduce", ">"),
    ("reduce util mean", ">"),
    ("reduce util max", ">"),
    ("link bound s", ">"),
    ("reduce / bound", ">"),
)


def _over(value: Optional[float], bound: Optional[float]) -> Optional[float]:
    return value / bound if value is not None and bound else None


def network_table(records: Sequence[Dict[str, Any]]) -> Optional[str]:
    """Where the time and the bytes went on a namespace cluster, medians over the ok runs: stage
    times, fetch wait, the plugin's time-averaged buffered bytes, bytes the links carried to
    their workers during the map and the reduce stage, the reduce stage's mean and largest
    link utilisation, its link bound and each run's reduce stage as a multiple of its own bound.
    None when no run has link figures (local-cluster)."""
    if not any(r.get("links") for r in records):
        return None
    groups = group_runs(r for r in records if r.get("status") == "ok")
    rows = []
    for (workload, skew, manager), runs in groups.items():
        figures = [run_figures(r.get("links") or {}) for r in runs]
        buffered = [(r.get("plugin") or {}).get(FETCH.mean_buffered_bytes) for r in runs]
        rows.append(
            [
                workload,
                f"{skew:g}",
                manager,
                _num(median(r.get("map_stage_s") for r in runs), digits=2),
                _num(median(r.get("reduce_stage_s") for r in runs), digits=2),
                _num(median(r.get("fetch_wait_ms") for r in runs), 1000.0, 2),
                _num(median(buffered), 1 << 20),
                _num(median(f["link_map_bytes"] for f in figures), 1 << 20, 0),
                _num(median(f["link_reduce_bytes"] for f in figures), 1 << 20, 0),
                _num(median(f["reduce_util_mean"] for f in figures), digits=2),
                _num(median(f["reduce_util_max"] for f in figures), digits=2),
                _num(median(f["reduce_bound_s"] for f in figures), digits=2),
                _num(
                    median(
                        _over(r.get("reduce_stage_s"), f["reduce_bound_s"]) for r, f in zip(runs, figures)
                    ),
                    digits=2,
                ),
            ]
        )
    return format_columns(NETWORK_COLUMNS, rows)


PUSH_COLUMNS = (
    ("workload", "<"),
    ("skew", ">"),
    ("manager", "<"),
    ("merged MiB", ">"),
    ("merged share", ">"),
    ("merged by map end", ">"),
    ("chunks", ">"),
    ("blocks/chunk", ">"),
    ("requests", ">"),
    ("chunk fallbacks", ">"),
    ("crossed twice MiB", ">"),
    ("tasks at owner", ">"),
    ("chunk bytes at owner", ">"),
)


def push_table(records: Sequence[Dict[str, Any]]) -> Optional[str]:
    """What mode="push" did, medians over the ok runs: bytes reduce tasks read out of merged
    chunks and their share of all bytes read, the share of the shuffles' bytes the owners had
    merged when the map stages ended (the driver's summaries), chunks read and blocks per chunk, requests to
    other executors, chunks whose blocks had to be read from their map outputs instead,
    bytes that crossed the network twice, and the share of the reduce tasks that read chunks at
    their partitions' owner and of the chunks' bytes they read there. None when no run read a merged chunk."""

    def merged(r: Dict[str, Any]) -> bool:
        return bool((r.get("plugin") or {}).get(FETCH.chunks_read))

    groups = group_runs(r for r in records if r.get("status") == "ok" and merged(r))
    if not groups:
        return None
    rows = []
    for (workload, skew, manager), runs in groups.items():
        plugin = [r["plugin"] for r in runs]
        share = [
            p.get(FETCH.bytes_from_stores, 0) / sum(p[FETCH.bytes_by_transport].values())
            for p in plugin
            if sum((p.get(FETCH.bytes_by_transport) or {}).values())
        ]
        per_chunk = [p.get(FETCH.blocks_from_stores, 0) / p[FETCH.chunks_read] for p in plugin]
        by_map_end = [_merged_by_map_end(r.get("push") or {}) for r in runs]
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
            [
                workload,
                f"{skew:g}",
                manager,
                _num(median(p.get(FETCH.bytes_from_stores) for p in plugin), 1 << 20),
                _num(median(share), digits=2),
                _num(median(s for s in by_map_end if s is not None), digits=2),
                _num(median(p.get(FETCH.chunks_read) for p in plugin), digits=0),
                _num(median(per_chunk), digits=1),
                _num(median(p.get(FETCH.requests) for p in plugin), digits=0),
                _num(median(p.get(FETCH.chunk_fallbacks) for p in plugin), digits=0),
                _num(median(p.get(FETCH.bytes_crossed_twice) for p in plugin), 1 << 20),
                _num(median(at_owner), digits=2),
                _num(median(bytes_at_owner), digits=2),
            ]
        )
    return format_columns(PUSH_COLUMNS, rows)


KILL_COLUMNS = (
    ("workload", "<"),
    ("skew", ">"),
    ("manager", "<"),
    ("wall s", ">"),
    ("vs no kill", ">"),
    ("killed at s", ">"),
    ("maps rerun", ">"),
    ("reduce tasks rerun", ">"),
)


COMBINE_COLUMNS = (
    ("workload", "<"),
    ("skew", ">"),
    ("manager", "<"),
    ("wall s", ">"),
    ("vs sort", ">"),
    ("map s", ">"),
    ("reduce s", ">"),
    ("map CPU vs sort", ">"),
    ("reduce CPU vs sort", ">"),
    ("read MiB", ">"),
    ("read vs sort", ">"),
    ("read records", ">"),
    ("combine ratio", ">"),
    ("maps folded", ">"),
    ("maps not folded", ">"),
    ("peak exec MiB", ">"),
)


def combine_table(records: Sequence[Dict[str, Any]]) -> Optional[str]:
    """What local reduction did against sort, medians over the ok runs of each (workload, skew,
    manager) that has a run with a combined read: wall, map and reduce stage (and their executor
    CPU seconds against sort's), the shuffle bytes
    reduce tasks read (and their ratio to sort's in the same workload and skew) and records, rows
    folded per combined row read, map outputs folded and those written whole (judging whether
    folding pays, or where it does not), and peak executor memory. Sort's rows are the baseline.
    None when no run read combined records."""

    def combined(r: Dict[str, Any]) -> bool:
        return bool(((r.get("plugin") or {}).get("combine") or {}).get(COMBINE.segments_read))

    shown = {(r["workload"], float(r["skew"])) for r in records if r.get("status") == "ok" and combined(r)}
    if not shown:
        return None
    groups = group_runs(
        r for r in records if r.get("status") == "ok" and (r["workload"], float(r["skew"])) in shown
    )
    sort = {(w, s): runs for (w, s, m), runs in groups.items() if m == SORT}
    rows = []
    for (workload, skew, manager), runs in groups.items():
        base = sort.get((workload, skew), [])
        wall, base_wall = median(r.get("wall_s") for r in runs), median(r.get("wall_s") for r in base)
        read, base_read = (
            median(r.get("shuffle_read_bytes") for r in runs),
            median(r.get("shuffle_read_bytes") for r in base),
        )
        combine = [(r.get("plugin") or {}).get("combine") or {} for r in runs]
        rows.append(
            [
                workload,
                f"{skew:g}",
                manager,
                _num(wall, digits=2),
                _ratio(wall, base_wall),
                _num(median(r.get("map_stage_s") for r in runs), digits=2),
                _num(median(r.get("reduce_stage_s") for r in runs), digits=2),
                _ratio(median(r.get("map_cpu_s") for r in runs), median(r.get("map_cpu_s") for r in base)),
                _ratio(
                    median(r.get("reduce_cpu_s") for r in runs), median(r.get("reduce_cpu_s") for r in base)
                ),
                _num(read, 1 << 20),
                _ratio(read, base_read),
                _num(median(r.get("shuffle_read_records") for r in runs), digits=0),
                _num(median(c.get(COMBINE.combine_ratio) for c in combine if c), digits=1),
                _num(median(c.get(COMBINE.maps_folded) for c in combine if c), digits=0),
                _num(median(c.get(COMBINE.maps_not_folded) for c in combine if c), digits=0),
                _num(median(r.get("peak_executor_memory_bytes") for r in runs), 1 << 20, 0),
            ]
        )
    return format_columns(COMBINE_COLUMNS, rows)


MEMORY_COLUMNS = (
    ("workload", "<"),
    ("skew", ">"),
    ("manager", "<"),
    ("wall s", ">"),
    ("vs sort", ">"),
    ("netty pooled MiB", ">"),
    ("vs sort", ">"),
    ("netty direct MiB", ">"),
    ("plugin held MiB", ">"),
    ("combine held MiB", ">"),
    ("RSS MiB", ">"),
    ("vs sort", ">"),
    ("heap MiB", ">"),
    ("vs sort", ">"),
    ("OOM retries", ">"),
    ("tasks rerun", ">"),
)


def _executor_peak(record: Dict[str, Any], field: str) -> Optional[float]:
    """The largest of one run's executors' ``fetch_memory`` peaks of ``field`` (None: none)."""
    values = [e.get(field) for e in (record.get("fetch_memory") or {}).values() if e.get(field) is not None]
    return max(values) if values else None


def _out_of_memory_retries(record: Dict[str, Any]) -> Optional[int]:
    """How often one run's reads ran out of Netty's memory, over its executors: episodes of
    Spark's fetcher (sort's reads) plus blocks the plugin's fetcher deferred (None: no figure)."""
    counts = [
        e.get(field)
        for e in (record.get("fetch_memory") or {}).values()
        for field in ("netty_oom_episodes", "plugin_oom_deferrals")
        if e.get(field) is not None
    ]
    return sum(counts) if counts else None


def memory_table(records: Sequence[Dict[str, Any]]) -> Optional[str]:
    """The memory shuffle reads held, medians over the ok runs of the peak of the executor that
    held most: Netty's pooled direct memory (and its ratio to sort's in the same workload and
    skew), all of Netty's direct memory, what the plugin's reduce tasks held against the
    executor's fetch budget and what its local reduction held, and the executor's RSS and heap
    peaks (and their ratios to sort's); beside the wall time, the
    times reads ran out of Netty's memory and the tasks that ran again. None when no run has the
    probe's figures."""
    ok = [r for r in records if r.get("status") == "ok" and r.get("fetch_memory")]
    if not ok:
        return None
    groups = group_runs(ok)
    sort = {(w, s): runs for (w, s, m), runs in groups.items() if m == SORT}
    rows = []
    for (workload, skew, manager), runs in groups.items():
        base = sort.get((workload, skew), [])
        wall, base_wall = median(r.get("wall_s") for r in runs), median(r.get("wall_s") for r in base)
        pooled = median(_executor_peak(r, "netty_pooled_bytes") for r in runs)
        base_pooled = median(_executor_peak(r, "netty_pooled_bytes") for r in base)
        rss, base_rss = (median(_executor_peak(r, "rss_peak_bytes") for r in g) for g in (runs, base))
        heap, base_heap = (median(_executor_peak(r, "heap_peak_bytes") for r in g) for g in (runs, base))
        rows.append(
            [
                workload,
                f"{skew:g}",
                manager,
                _num(wall, digits=2),
                _ratio(wall, base_wall),
                _num(pooled, 1 << 20),
                _ratio(pooled, base_pooled),
                _num(median(_executor_peak(r, "netty_direct_bytes") for r in runs), 1 << 20),
                _num(median(_executor_peak(r, "plugin_fetch_bytes") for r in runs), 1 << 20),
                _num(median(_executor_peak(r, "plugin_combine_bytes") for r in runs), 1 << 20),
                _num(rss, 1 << 20, 0),
                _ratio(rss, base_rss),
                _num(heap, 1 << 20, 0),
                _ratio(heap, base_heap),
                _num(median(_out_of_memory_retries(r) for r in runs), digits=0),
                _num(
                    median(
                        (r.get("map_tasks_rerun") or 0) + (r.get("reduce_tasks_rerun") or 0) for r in runs
                    ),
                    digits=0,
                ),
            ]
        )
    return format_columns(MEMORY_COLUMNS, rows)


def kill_table(records: Sequence[Dict[str, Any]]) -> Optional[str]:
    """What each ``--kill`` cost, medians over the ok runs: the wall time, as a multiple of the
    same manager's median without a kill (same workload and skew, when the benchmark ran one),
    when in the workload the executor was killed, the map tasks that ran again and the reduce
    task attempts that failed or were killed. None when no run killed an executor."""
    ok = [r for r in records if r.get("status") == "ok"]
    if not any(r.get("kill") for r in ok):
        return None
    # Without a kill, a scenario's name is its workload's.
    no_kill_wall = {
        key: median(r.get("wall_s") for r in runs)
        for key, runs in group_runs(r for r in ok if not r.get("kill")).items()
    }
    rows = []
    for (name, skew, manager), runs in group_runs(r for r in ok if r.get("kill")).items():
        wall = median(r.get("wall_s") for r in runs)
        base = no_kill_wall.get((runs[0]["workload"], skew, manager))
        rows.append(
            [
                name,
                f"{skew:g}",
                manager,
                _num(wall, digits=2),
                _ratio(wall, base),
                _num(median((r.get("fault") or {}).get("at_s") for r in runs), digits=1),
                _num(median(r.get("map_tasks_rerun") for r in runs), digits=0),
                _num(median(r.get("reduce_tasks_rerun") for r in runs), digits=0),
            ]
        )
    return format_columns(KILL_COLUMNS, rows)


def _merged_by_map_end(summaries: Dict[str, Any]) -> Optional[float]:
    """Merged bytes over shuffle bytes, over every shuffle summary of one run (None: none)."""
    total = sum(s.get("shuffle_bytes", 0) for s in summaries.values())
    return sum(s.get("merged_bytes", 0) for s in summaries.values()) / total if total else None


def format_columns(columns, rows: List[List[str]]) -> str:
    """``rows`` under ``columns`` ((name, "<" or ">") each), fixed width."""
    header = [name for name, _ in columns]
    widths = [max(len(row[i]) for row in [header] + rows) for i in range(len(header))]

    def line(cells: List[str]) -> str:
        return "  ".join(
            cell.ljust(width) if align == "<" else cell.rjust(width)
            for cell, width, (_, align) in zip(cells, widths, columns)
        ).rstrip()

    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(row) for row in rows])
