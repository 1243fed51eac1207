"""``bench --min-memory``: the smallest executor memory at which each manager completes a
workload with no task lost to memory, found by bisection (``--min-memory direct``: the smallest
cap on the executors' direct memory, ``-XX:MaxDirectMemorySize``, at ``--executor-memory``).

A probe is one run at one executor memory. It passes when the run succeeds with no task attempt
failed or run again and nothing in Spark's logs that should not be there (an OutOfMemoryError,
an executor lost, a fetch failing for want of direct memory): on a run without faults, each of
these at a smaller memory is memory's doing. The search keeps the largest memory known to fail
(at first Spark's own floor, :data:`SPARK_FLOOR_MB`, below which an executor does not start) and
the smallest known to pass (at first ``--executor-memory``, probed first), and halves the gap
until it is at most ``step``; the managers' searches take turns, a probe each, so that drift
hits all of them. The smallest passing memory's wall time is compared with the same manager's at
twice that memory."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

from ..bench_run import BenchRun
from ..values import parse_size
from .config import BenchConfig, ManagerSpec
from .runner import RunSpec
from .tables import format_rows, left, right

#: Spark refuses executors below 1.5 times its reserved 300 MiB of system memory.
SPARK_FLOOR_MB = 450

#: The search stops once the smallest passing and the largest failing memory are this close.
STEP_MB = 32

#: Where a run's direct memory is capped: Spark's executors default to a cap equal to their
#: heap, where fetched blocks in Netty's buffers (sort's) rarely reach it.
DIRECT_CAP_KEY = "spark.executor.extraJavaOptions"


#: Spark refuses executors whose direct memory is below this (200 MiB unless set), so it is
#: the direct cap's floor; set it lower with ``--conf`` to search below 200 MiB.
TO_MEMORY_KEY = "spark.network.maxRemoteBlockSizeFetchToMem"


def floor_mb(config: BenchConfig) -> int:
    """The largest memory known to fail before any probe: below it no executor starts."""
    if config.min_memory == "direct":
        return parse_size(config.conf.get(TO_MEMORY_KEY, "200m")) >> 20
    return SPARK_FLOOR_MB


def probe_config(config: BenchConfig, memory_mb: int) -> BenchConfig:
    """``config`` with its executors' memory (or, under ``--min-memory direct``, the cap on
    their direct memory) set to ``memory_mb``."""
    if config.min_memory != "direct":
        return dataclasses.replace(config, executor_memory_mb=memory_mb)
    cap = f"-XX:MaxDirectMemorySize={memory_mb}m"
    options = " ".join(o for o in (config.conf.get(DIRECT_CAP_KEY), cap) if o)
    return dataclasses.replace(config, conf={**config.conf, DIRECT_CAP_KEY: options})


def lost_to_memory(record: BenchRun) -> Optional[str]:
    """Why a probe failed (None: it passed)."""
    if not record.ok:
        return (record.error or "failed").splitlines()[0]
    failed = sum(int(stage.get("failed") or 0) for stage in record.stages)
    rerun = (record.map_tasks_rerun or 0) + (record.reduce_tasks_rerun or 0)
    if failed or rerun:
        return f"{failed} task attempt(s) failed, {rerun} task(s) run again"
    if record.log_findings:
        return "Spark logged: " + record.log_findings[0].splitlines()[0]
    return None


@dataclass
class Search:
    """One (workload, skew, manager)'s bisection."""

    workload: str
    skew: float
    manager: ManagerSpec
    start_mb: int
    #: Nothing below it runs: the largest memory known to fail before any probe.
    floor_mb: int
    failing_mb: int = field(init=False)
    passing_mb: Optional[int] = None
    probes: List[Tuple[int, BenchRun]] = field(default_factory=list)
    doubled: Optional[BenchRun] = None

    def __post_init__(self) -> None:
        self.failing_mb = self.floor_mb

    def next_mb(self, step_mb: int) -> Optional[int]:
        """The memory to probe next; None once the search is over."""
        if not self.probes:
            return self.start_mb
        if self.passing_mb is None:
            return None  # fails at --executor-memory: nothing below it will pass
        if self.passing_mb - self.failing_mb > step_mb:
            middle = (self.passing_mb + self.failing_mb) // 2
            return middle - middle % 8  # round to 8 MiB
        return None

    def record(self, memory_mb: int, run: BenchRun) -> None:
        self.probes.append((memory_mb, run))
        if lost_to_memory(run) is None:
            self.passing_mb = memory_mb if self.passing_mb is None else min(self.passing_mb, memory_mb)
        else:
            self.failing_mb = max(self.failing_mb, memory_mb)

    @property
    def smallest(self) -> Optional[BenchRun]:
        return next((run for mb, run in self.probes if mb == self.passing_mb), None)


def search_all(
    config: BenchConfig,
    runner: Callable[[BenchConfig, RunSpec], BenchRun],
    log: Callable[[str], None] = print,
    step_mb: int = STEP_MB,
) -> List[Search]:
    """Every (workload, skew, manager)'s search, taking turns; then, for each that found a
    passing memory, one run at twice it."""
    floor = floor_mb(config)
    searches = [
        Search(w, s, m, config.executor_memory_mb, floor)
        for w in config.workloads
        for s in config.skews
        for m in config.managers
    ]
    index = 0
    # A probe that thrashes in its collector ends as a failure, not after --timeout.
    timeouts: Dict[Tuple[str, float, str], float] = {}

    def run_at(search: Search, memory_mb: int) -> BenchRun:
        nonlocal index
        spec = RunSpec(index, 0, search.workload, search.skew, search.manager)
        index += 1
        key = (search.workload, search.skew, search.manager.label)
        log(f"[min-memory] {search.workload} skew={search.skew:g} {search.manager.label} at {memory_mb} MiB")
        probe = dataclasses.replace(
            probe_config(config, memory_mb), timeout_s=timeouts.get(key, config.timeout_s)
        )
        run = runner(probe, spec)
        if key not in timeouts and run.ok and run.process_s:
            timeouts[key] = max(120.0, 5 * run.process_s)
        why = lost_to_memory(run)
        log(f"[min-memory]   {'passed' if why is None else 'failed: ' + why}, wall {run.wall_s}")
        return run

    while True:
        pending = [(s, s.next_mb(step_mb)) for s in searches]
        pending = [(s, mb) for s, mb in pending if mb is not None]
        if not pending:
            break
        for search, memory_mb in pending:
            search.record(memory_mb, run_at(search, memory_mb))
    for search in searches:
        if search.passing_mb is not None:
            search.doubled = run_at(search, 2 * search.passing_mb)
    return searches


def summary(searches: List[Search]) -> Dict[str, Dict[str, object]]:
    """Per search, by ``workload skew manager``: the smallest passing memory (None: not even
    ``--executor-memory``), its ratio to sort's, the walls there and at twice it, the probes."""
    sort = {(s.workload, s.skew): s.passing_mb for s in searches if s.manager.label == "sort"}
    out: Dict[str, Dict[str, object]] = {}
    for s in searches:
        base = sort.get((s.workload, s.skew))
        out[f"{s.workload} {s.skew:g} {s.manager.label}"] = {
            "smallest_mb": s.passing_mb,
            "vs_sort": None if not (s.passing_mb and base) else round(s.passing_mb / base, 3),
            "largest_failing_mb": s.failing_mb,
            "floor_mb": s.floor_mb,
            "wall_s": None if s.smallest is None else s.smallest.wall_s,
            "wall_at_double_s": None if s.doubled is None or not s.doubled.ok else s.doubled.wall_s,
            "probes": [(mb, lost_to_memory(run) or "passed") for mb, run in s.probes],
        }
    return out


def min_memory_table(searches: List[Search]) -> str:
    """One row per search: the smallest passing memory and its ratio to sort's, the largest
    failing one, the walls at the smallest and at twice it, and the probes run."""
    rows = []
    for key, figures in summary(searches).items():
        workload, skew, manager = key.split(" ", 2)
        rows.append(
            [
                left("workload", workload),
                right("skew", skew),
                left("manager", manager),
                right("smallest MiB", _text(figures["smallest_mb"], "> --executor-memory")),
                right("vs sort", "-" if figures["vs_sort"] is None else f"{figures['vs_sort']:.2f}x"),
                # None failed above the floor: the search ended there.
                right("fails at MiB", _failing(figures["largest_failing_mb"], figures["floor_mb"])),
                right("wall s there", _text(figures["wall_s"])),
                right("wall s at 2x", _text(figures["wall_at_double_s"])),
                right("probes", str(len(figures["probes"]))),  # type: ignore[arg-type]
            ]
        )
    return format_rows(rows)


def _text(value: object, none: str = "-") -> str:
    return none if value is None else f"{value}"


def _failing(memory_mb: object, floor_mb: int) -> str:
    return f"{memory_mb}" if memory_mb != floor_mb else f"none > {floor_mb}"
