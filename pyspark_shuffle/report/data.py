"""What the skew report shows of one shuffle read, and where it comes from: a live session (the
plugin's reports through its Python facade), a bench JSON (the same reports, kept per run) or a
Spark event log (the plugin's ``ShuffleReadReport`` events; for stages the plugin did not read,
the reduce tasks' shuffle-read bytes Spark logs)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional

from .._jvm import java_spark_context, python_api
from ..bench_run import BenchRun
from .zipf import zipf_exponent

#: The event the plugin posts per shuffle and stage when the stage completes (its class name).
REPORT_EVENT = "org.apache.spark.shuffle.adaptive.metrics.ShuffleReadReport"


@dataclass
class ShuffleView:
    """One shuffle as a stage read it. ``partition_bytes`` are the bytes the reduce tasks read
    of each partition (``partitions_from`` "reduce tasks": exact, where each task read one
    partition; in event logs of other managers, one entry per reduce task) or the map outputs'
    MapStatus sizes ("map outputs": rounded by Spark to within 10%). ``tasks`` rows hold each reduce task's
    executor, launch and finish time (epoch ms), bytes, fetch wait and in-flight limit;
    ``merged`` (mode=push) the bytes read out of merged chunks and from files ("chunks", "files"),
    the chunks' bytes held by the reading task's own executor ("at_owner"), and the tasks that
    read chunks and those of them that ran at their owner ("tasks", "tasks_at_owner");
    ``combine`` what local reduction did of the shuffle (the counters of
    ``metrics(spark)["combine"]``: rows folded, combined rows and bytes read, and the bytes of
    the blocks they stood for); ``cpu`` what the shuffle's map stage and the stages that read it
    cost their executors so far (``{"map": ..., "reduce": ...}``, each with ``executor_cpu_s``,
    ``jvm_gc_s``, ``executor_run_s`` and ``tasks``, from Spark's task metrics).

    Per source executor: ``remote_bytes_by_source``, the bytes it sent to other executors (over
    its link); ``rate_by_source``, the bytes per second those executors observed from it,
    summed; ``host_by_source``; and, from a bench run on the namespace cluster,
    ``link_bound_s_by_source``: what its link carried during the reduce stage over its rate.

    From a bench run, per executor: ``fetch_memory_by_executor``, the run's peaks of the memory
    shuffle reads held (Netty's pooled and direct memory, the plugin's fetch budget in use) and of
    the process (heap, RSS), as the bench's ``fetch_memory``."""

    label: str
    partition_bytes: List[int]
    partitions_from: str = "map outputs"
    bytes_by_source: Dict[str, int] = field(default_factory=dict)
    wait_ms_by_source: Dict[str, float] = field(default_factory=dict)
    tasks: List[Dict[str, Any]] = field(default_factory=list)
    merged: Dict[str, int] = field(default_factory=dict)
    combine: Dict[str, float] = field(default_factory=dict)
    cpu: Dict[str, Dict[str, float]] = field(default_factory=dict)
    remote_bytes_by_source: Dict[str, int] = field(default_factory=dict)
    rate_by_source: Dict[str, float] = field(default_factory=dict)
    host_by_source: Dict[str, str] = field(default_factory=dict)
    link_bound_s_by_source: Dict[str, float] = field(default_factory=dict)
    fetch_memory_by_executor: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    @property
    def link_seconds_by_source(self) -> Dict[str, float]:
        """Per source, its remote bytes at the rate observed from it: how long its link held
        the stage, as the critical fetch order estimates it."""
        return {
            source: self.remote_bytes_by_source.get(source, 0) / rate
            for source, rate in self.rate_by_source.items()
            if rate > 0
        }

    @property
    def total_bytes(self) -> int:
        return sum(self.partition_bytes)

    @property
    def alpha(self) -> float:
        """The Zipf exponent fitted to the partition sizes (see :func:`zipf_exponent`)."""
        return zipf_exponent(self.partition_bytes)


def from_report(report: Dict[str, Any], prefix: str = "") -> ShuffleView:
    """A view of one plugin report (the facade's JSON or an event log line)."""
    label = f"{prefix}shuffle {report['shuffleId']}, stage {report['stageId']}"
    if report.get("stageAttemptId"):
        label += f" (attempt {report['stageAttemptId']})"
    if report.get("tasksLeftOut"):
        label += f", {report['tasksLeftOut']} more tasks not shown"
    return ShuffleView(
        label=label,
        partition_bytes=[int(b) for b in report.get("partitionBytes") or []],
        partitions_from=report.get("partitionBytesFrom", "map outputs"),
        bytes_by_source={str(k): int(v) for k, v in (report.get("bytesBySource") or {}).items()},
        wait_ms_by_source={str(k): float(v) for k, v in (report.get("waitMsBySource") or {}).items()},
        tasks=list(report.get("tasks") or []),
        merged={str(k): int(v) for k, v in (report.get("merged") or {}).items()},
        combine={str(k): float(v) for k, v in (report.get("combine") or {}).items()},
        cpu={
            str(side): {str(k): float(v) for k, v in (figures or {}).items()}
            for side, figures in (report.get("cpu") or {}).items()
        },
        remote_bytes_by_source={str(k): int(v) for k, v in (report.get("remoteBytesBySource") or {}).items()},
        rate_by_source={str(k): float(v) for k, v in (report.get("rateBySource") or {}).items()},
        host_by_source={str(k): str(v) for k, v in (report.get("hostBySource") or {}).items()},
    )


def reports_of_session(spark: Any) -> List[Dict[str, Any]]:
    """The plugin's reports of a running session, as plain dicts (what a bench run keeps)."""
    return json.loads(str(python_api(spark).shuffleReportsJson(java_spark_context(spark))))


def live(spark: Any) -> List[ShuffleView]:
    """The shuffles a running session's plugin read, the latest stage of each."""
    return [from_report(r) for r in reports_of_session(spark)]


def from_bench(records: Iterable[BenchRun]) -> List[ShuffleView]:
    """The shuffles of every ok run of a bench's records that kept the plugin's reports."""
    views = []
    for record in records:
        if not record.ok:
            continue
        prefix = f"run {record.index}: {record.workload} skew={record.skew:g} {record.manager}, "
        for report in record.shuffles:
            view = from_report(report, prefix)
            view.link_bound_s_by_source = _link_bounds(view.host_by_source, record.links)
            view.fetch_memory_by_executor = record.fetch_memory
            views.append(view)
    return views


def _link_bounds(hosts: Dict[str, str], links: Dict[str, Any]) -> Dict[str, float]:
    """Per source executor, the reduce stage's bytes over its worker's link (the larger
    direction) over the link's rate, where a bench record's link has the source's host."""
    by_address = {
        link.get("address"): link for link in links.values() if isinstance(link.get("reduce"), dict)
    }
    bounds = {}
    for source, host in hosts.items():
        link = by_address.get(host)
        if link:
            carried = max(link["reduce"]["down_bytes"], link["reduce"]["up_bytes"])
            bounds[source] = carried * 8 / link["rate_bps"]
    return bounds


def event_log_files(path: Path) -> List[Path]:
    """The event log files under ``path``: the file itself, the files of an application's
    rolling log directory (``eventlog_v2_*``), or those of every application of a
    ``spark.eventLog.dir``."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no such event log file or directory: {path}")
    if path.name.startswith("eventlog_v2_"):
        return sorted(p for p in path.iterdir() if p.name.startswith("events_"))
    files = []
    for entry in sorted(path.iterdir()):
        if entry.is_dir() and entry.name.startswith("eventlog_v2_"):
            files.extend(event_log_files(entry))
        elif entry.is_file() and not entry.name.startswith("."):
            files.append(entry)
    return files


def _lines(file: Path) -> Iterator[str]:
    """The text lines of an event log file: plain, or zstd-compressed (Spark's default codec)."""
    if file.suffix in (".zstd", ".zst"):
        import io

        import zstandard

        with file.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as plain:
            yield from io.TextIOWrapper(plain, encoding="utf-8")
    elif file.suffix in (".lz4", ".lzf", ".snappy"):
        raise ValueError(
            f"{file} is compressed with {file.suffix[1:]}, which the report does not read: write "
            "event logs with spark.eventLog.compression.codec=zstd (Spark's default) or "
            "spark.eventLog.compress=false"
        )
    else:
        with file.open(encoding="utf-8") as text:
            yield from text


def _events(files: Iterable[Path]) -> Iterator[Dict[str, Any]]:
    for file in files:
        for line in _lines(file):
            if line.strip():
                yield json.loads(line)


def from_event_log(path: Path) -> List[ShuffleView]:
    """The shuffle reads an event log records: the plugin's reports, and for reduce stages
    without one (another shuffle manager), each reduce task's shuffle-read bytes."""
    views: List[ShuffleView] = []
    reported = set()
    read_by_stage: Dict[tuple, List[tuple]] = {}
    app: Optional[str] = None
    for event in _events(event_log_files(Path(path))):
        kind = event.get("Event")
        if kind == "SparkListenerApplicationStart":
            app = event.get("App ID") or event.get("App Name")
        elif kind == REPORT_EVENT:
            views.append(from_report(event, f"{app}: " if app else ""))
            reported.add((app, event["stageId"], event.get("stageAttemptId", 0)))
        elif kind == "SparkListenerTaskEnd":
            read = ((event.get("Task Metrics") or {}).get("Shuffle Read Metrics")) or {}
            total = int(read.get("Remote Bytes Read", 0)) + int(read.get("Local Bytes Read", 0))
            if total:
                key = (app, event["Stage ID"], event.get("Stage Attempt ID", 0))
                info = event.get("Task Info") or {}
                read_by_stage.setdefault(key, []).append((int(info.get("Index", 0)), total))
    for (app_id, stage, attempt), tasks in read_by_stage.items():
        if (app_id, stage, attempt) not in reported:
            label = (f"{app_id}: " if app_id else "") + f"stage {stage} (attempt {attempt}), reduce tasks"
            views.append(ShuffleView(label, [b for _, b in sorted(tasks)], partitions_from="reduce tasks"))
    return views
