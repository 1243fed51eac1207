"""``--profile``: every executor of every run profiled stage by stage (the plugin's stage profiler,
async-profiler), what each run's profile says summed by kind of stage and phase of the shuffle,
tables of CPU seconds by phase with every manager side by side, and per (workload, skew) a page
of flame graphs, sort's beside the plugin's."""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ..bench_run import BenchRun
from ..profile import PHASES, flamegraph_page, phase_seconds, read_segments, stacks_by_kind
from .tables import format_columns, group_runs

#: Kinds of stage in the order tables and pages show them ("idle": background work while no
#: task ran, after a map stage say).
KINDS = ("map", "reduce", "mixed", "idle", "other")


def app_dir(directory: str, app_id: str) -> Optional[Path]:
    """Application ``app_id``'s profile in a run's profile directory (None: none yet). Named,
    as the directory may keep an earlier bench's application of the same run."""
    path = Path(directory) / app_id
    return path if path.is_dir() else None


def _last_ends(path: Path) -> Dict[str, int]:
    """Per executor, the end (epoch ms) of its newest segment so far."""
    ends: Dict[str, int] = {}
    index = path / "segments.jsonl"
    if index.is_file():
        for line in index.read_text().splitlines():
            entry = json.loads(line) if line.strip() else {}
            if "end_ms" in entry:
                ends[entry["executor"]] = max(ends.get(entry["executor"], 0), entry["end_ms"])
    return ends


def wait_for_segments(
    directory: str, app_id: str, executors: Iterable[str], not_before_ms: int, timeout_s: float
) -> List[str]:
    """Waits until each of ``executors`` sent a segment that ends at ``not_before_ms`` or later
    (an executor ends its segment once no task ran for a moment); returns those still missing
    at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        path = app_dir(directory, app_id)
        ends = _last_ends(path) if path else {}
        missing = sorted(e for e in executors if ends.get(e, 0) < not_before_ms)
        if not missing or time.monotonic() > deadline:
            return missing
        time.sleep(0.1)  # polling the driver's files; ends on the condition or the deadline


def _kinds(stage_rows: Sequence[Dict[str, Any]]):
    kinds = {row["stage"]: row["kind"] for row in stage_rows or ()}
    return kinds.get


def _segments(path: Optional[Path], since_ms: int):
    """The segments of an application's profile that end after ``since_ms`` (a timed run's, not
    its warm-up runs'), and the executors that could not profile."""
    segments, unavailable = read_segments(str(path)) if path else ([], {})
    return [s for s in segments if s.end_ms > since_ms], unavailable


def summarize_run(
    directory: str, app_id: str, stage_rows: Sequence[Dict[str, Any]], since_ms: int = 0
) -> Dict[str, Any]:
    """Application ``app_id``'s profile in a run's directory, from ``since_ms`` on: CPU seconds
    by kind of stage and phase, the sampling event and interval, and the executors that ran
    without a profile (with why)."""
    path = app_dir(directory, app_id)
    segments, unavailable = _segments(path, since_ms)
    by_kind = {
        kind: {phase: round(s, 3) for phase, s in phase_seconds(stacks, per_sample).items()}
        for kind, (stacks, per_sample) in stacks_by_kind(segments, _kinds(stage_rows)).items()
    }
    return {
        "dir": str(path) if path else directory,
        "since_ms": since_ms,
        "event": segments[0].event if segments else None,
        "interval_ns": segments[0].interval_ns if segments else None,
        "segments": len(segments),
        "by_kind": by_kind,
        "unavailable": unavailable,
    }


def _profiled(records: Sequence[BenchRun]) -> List[BenchRun]:
    return [r for r in records if r.ok and (r.profile or {}).get("segments")]


def _groups(records: Sequence[BenchRun]) -> Dict[Tuple[str, float], Dict[str, List[BenchRun]]]:
    """Profiled runs by (workload, skew), then by manager, in the order first seen."""
    out: Dict[Tuple[str, float], Dict[str, List[BenchRun]]] = {}
    for (workload, skew, manager), runs in group_runs(_profiled(records)).items():
        out.setdefault((workload, skew), {})[manager] = runs
    return out


def _median_phase(runs: List[BenchRun], kind: str, phase: str) -> float:
    return statistics.median((r.profile["by_kind"].get(kind) or {}).get(phase, 0.0) for r in runs)


def phase_tables(records: Sequence[BenchRun]) -> List[str]:
    """Per (workload, skew) and kind of stage, CPU seconds by phase (medians over the profiled
    runs) with a column per manager, and each manager's total against the first's (sort's when
    it ran)."""
    tables = []
    for (workload, skew), by_manager in _groups(records).items():
        managers = list(by_manager)
        for kind in KINDS:
            if not any(kind in r.profile["by_kind"] for runs in by_manager.values() for r in runs):
                continue
            cells = {m: {p: _median_phase(by_manager[m], kind, p) for p in PHASES} for m in managers}
            phases = [p for p in PHASES if any(cells[m][p] >= 0.005 for m in managers)]
            totals = {m: sum(cells[m].values()) for m in managers}
            header = ["phase", *managers] + ([f"{m} - {managers[0]}" for m in managers[1:]])
            rows = [
                [phase, *(f"{cells[m][phase]:.2f}" for m in managers)]
                + [f"{cells[m][phase] - cells[managers[0]][phase]:+.2f}" for m in managers[1:]]
                for phase in phases
            ]
            base = totals[managers[0]]
            rows.append(
                ["total", *(f"{totals[m]:.2f}" for m in managers)]
                + [
                    f"{totals[m] - base:+.2f}" + (f" ({totals[m] / base:.2f}x)" if base else "")
                    for m in managers[1:]
                ]
            )
            runs = min(len(v) for v in by_manager.values())
            title = (
                f"CPU seconds by phase, {kind} stages: {workload} skew={skew:g} (async-profiler, "
                f"every thread of every executor, median of {runs} run{'s' if runs > 1 else ''})"
            )
            tables.append(
                title + "\n" + format_columns([(header[0], "<")] + [(h, ">") for h in header[1:]], rows)
            )
    return tables


def _merged_stacks(runs: List[BenchRun], kind: str) -> Tuple[Counter, float]:
    """The stacks of ``kind`` over ``runs``, as CPU seconds per run (sample counts divided
    evenly, so a graph of three runs is as wide as one run's)."""
    merged: Counter = Counter()
    per_sample = 0.0
    for r in runs:
        segments, _ = _segments(Path(r.profile["dir"]), r.profile.get("since_ms") or 0)
        stacks = stacks_by_kind(segments, _kinds(r.stages))
        if kind in stacks:
            merged.update(stacks[kind][0])
            per_sample = stacks[kind][1]
    return merged, per_sample / max(1, len(runs))


def write_pages(records: Sequence[BenchRun], out_dir: str) -> List[str]:
    """A flame-graph page per (workload, skew) under ``out_dir``; returns their paths."""
    written = []
    for (workload, skew), by_manager in _groups(records).items():
        rows = []
        for kind in KINDS:
            columns = [(m, *_merged_stacks(runs, kind)) for m, runs in by_manager.items()]
            if any(stacks for _, stacks, _ in columns):
                rows.append((kind, columns))
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{workload}-skew{skew:g}") + ".html"
        path = os.path.join(out_dir, name)
        os.makedirs(out_dir, exist_ok=True)
        with open(path, "w") as handle:
            handle.write(flamegraph_page(f"{workload} skew={skew:g}: executors' CPU by stage", rows))
        written.append(path)
    return written


def unavailable_summary(records: Sequence[BenchRun]) -> Optional[str]:
    """Why executors ran without a profile (one line per reason), or None."""
    reasons = Counter(
        reason for r in records for reason in ((r.profile or {}).get("unavailable") or {}).values()
    )
    if not reasons:
        return None
    return "\n".join(f"profile: {n} executor(s) ran without one: {reason}" for reason, n in reasons.items())
