"""One benchmark run's record: :class:`BenchRun`, the type ``python -m pyspark_shuffle bench`` fills
for each run, its tables read and its ``--json`` holds (``{"env": ..., "runs": [...]}``), and
:func:`~pyspark_shuffle.frames.bench_frame` turns into a DataFrame. Part of the library core (no
Spark, no tooling), so that results can be read where the bench does not run."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

#: What a field's ``kind`` metadata says of it: a figure of the run as a whole, whose median the
#: bench's main table shows (``number``), one a warm run also keeps of its cold run
#: (``time``: a number too), or something else the run's process reported (``outcome``).
NUMBER, TIME, OUTCOME = "number", "time", "outcome"


def _figure(kind: str, default: Any = None, doc: str = "") -> Any:
    """A field the run's process reports (None until it does, and where a failed run has none)."""
    if isinstance(default, (dict, list)):
        return field(default_factory=type(default), metadata={"kind": kind, "doc": doc})
    return field(default=default, metadata={"kind": kind, "doc": doc})


@dataclass
class BenchRun:
    """A benchmark run: what ran (the first fields, known before it ran), how it went, and what
    its Spark application measured. Spark's figures are of the timed run (after ``--warmup``
    runs, its own stages only); ``plugin`` holds the plugin's counters (``metrics()``'s
    ``application``, or since the warm-up's mark)."""

    index: int  # position in the execution order, from 0
    repeat: int  # from 0
    manager: str  # the manager's label (sort, adaptive, adaptive:mode=push, ...)
    manager_kind: str
    workload: str
    skew: float
    options: Dict[str, Any] = field(default_factory=dict)
    kill: Optional[str] = None  # the --kill point; None: no fault
    size_bytes: Optional[int] = None
    partition_bytes: Optional[int] = None
    num_partitions: Optional[int] = None
    seed: Optional[int] = None
    status: str = "failed"  # "ok" or "failed"
    error: Optional[str] = None
    traceback: Optional[str] = None
    process_s: Optional[float] = None  # the run's process, Spark's start and stop included
    #: What the driver and executors logged that they should not have.
    log_findings: List[str] = field(default_factory=list)

    wall_s: Optional[float] = _figure(TIME, doc="the workload's wall time")
    map_stage_s: Optional[float] = _figure(TIME, doc="union of the map stages' spans")
    reduce_stage_s: Optional[float] = _figure(TIME, doc="union of the reduce stages' spans")
    map_task_s: Optional[float] = _figure(OUTCOME, doc="the map tasks' run time, summed")
    reduce_task_s: Optional[float] = _figure(OUTCOME, doc="the reduce tasks' run time, summed")
    map_cpu_s: Optional[float] = _figure(TIME, doc="the map tasks' executor CPU")
    reduce_cpu_s: Optional[float] = _figure(TIME, doc="the reduce tasks' executor CPU")
    map_gc_s: Optional[float] = _figure(TIME)
    reduce_gc_s: Optional[float] = _figure(TIME)
    shuffle_write_bytes: Optional[int] = _figure(NUMBER)
    shuffle_read_bytes: Optional[int] = _figure(NUMBER)
    shuffle_read_records: Optional[int] = _figure(NUMBER)
    spark_fetch_wait_ms: Optional[int] = _figure(NUMBER, doc="Spark's fetch wait of every reduce task")
    max_reduce_partition_bytes: Optional[int] = _figure(NUMBER)
    reduce_tasks_ok: Optional[int] = _figure(OUTCOME, doc="reduce task attempts that succeeded")
    map_tasks_rerun: Optional[int] = _figure(OUTCOME)
    reduce_tasks_rerun: Optional[int] = _figure(OUTCOME)
    peak_executor_memory_bytes: Optional[int] = _figure(
        NUMBER, doc="the largest executor's heap plus non-heap peak"
    )
    #: Executor id -> its heap plus non-heap peak.
    memory_peak_by_executor: Dict[str, int] = _figure(OUTCOME, {})
    #: Executor id -> what it held over the reduce stage (peaks and means), and the peaks of the
    #: memory its shuffle reads held and of its process.
    fetch_memory: Dict[str, Dict[str, Optional[int]]] = _figure(OUTCOME, {})
    #: Executor id -> what it held over the timed run, in the probe's buckets (bench/held.py).
    memory_series: Dict[str, Dict[str, Any]] = _figure(OUTCOME, {})
    plugin: Dict[str, Any] = _figure(OUTCOME, {})
    push: Dict[str, Any] = _figure(OUTCOME, {})  # mode=push: the driver's summaries by shuffle
    result: Optional[Dict[str, Any]] = _figure(OUTCOME)  # counts and checksum, equal under any manager
    app_id: Optional[str] = _figure(OUTCOME)
    session_start_s: Optional[float] = _figure(OUTCOME)
    stages: List[Dict[str, Any]] = _figure(OUTCOME, [])
    spans: Dict[str, List[float]] = _figure(OUTCOME, {})
    links: Dict[str, Dict[str, Any]] = _figure(OUTCOME, {})  # a namespace cluster's link usage
    shuffles: List[Dict[str, Any]] = _figure(OUTCOME, [])  # the plugin's skew reports
    fault: Optional[Dict[str, Any]] = _figure(OUTCOME)  # --kill: when and what was killed
    profile: Optional[Dict[str, Any]] = _figure(OUTCOME)  # --profile: CPU by stage and phase
    warmup: Optional[int] = _figure(OUTCOME)  # --warmup runs before the timed one
    cold: Optional[Dict[str, Optional[float]]] = _figure(OUTCOME)  # the first run's TIME figures

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def take(self, outcome: Mapping[str, Any]) -> None:
        """The figures of a run's process's ``outcome`` (its other keys are its own)."""
        for f in OUTCOME_FIELDS:
            if outcome.get(f.name) is not None:
                setattr(self, f.name, outcome[f.name])

    def to_json(self) -> Dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, values: Mapping[str, Any]) -> "BenchRun":
        """A run of a ``--json`` file; a key no field has is an error naming it."""
        unknown = sorted(set(values) - set(FIELD_NAMES))
        if unknown:
            raise ValueError(f"bench run record has unknown keys {unknown}; known: {list(FIELD_NAMES)}")
        return cls(**values)


FIELD_NAMES: Tuple[str, ...] = tuple(f.name for f in dataclasses.fields(BenchRun))
OUTCOME_FIELDS = tuple(f for f in dataclasses.fields(BenchRun) if "kind" in f.metadata)

#: A run's time and CPU figures, which a warm run's record also keeps of its cold run (``cold``).
TIME_NUMBERS: Tuple[str, ...] = tuple(f.name for f in OUTCOME_FIELDS if f.metadata["kind"] == TIME)

#: The numbers a run record holds for its run as a whole (the bench table's medians).
RUN_NUMBERS: Tuple[str, ...] = tuple(f.name for f in OUTCOME_FIELDS if f.metadata["kind"] in (TIME, NUMBER))


def runs_of(data: Mapping[str, Any]) -> List[BenchRun]:
    """The runs of a bench JSON's contents (``{"env": ..., "runs": [...]}``)."""
    return [BenchRun.from_json(run) for run in data["runs"]]


def read_runs(path: Union[str, Path]) -> List[BenchRun]:
    """The runs of the bench JSON at ``path``."""
    with open(path, encoding="utf-8") as handle:
        return runs_of(json.load(handle))
