"""What Spark's driver and executors logged: read after every test and benchmark run.

A failure on one of Spark's own threads does not fail the job that met it. An exception in an
executor's heartbeater stops its heartbeats, and the driver declares the executor lost two
minutes later, often after the job returned a correct result; an exception in a listener is
logged and the event dropped. Only the logs tell, so tests (:mod:`pyspark_shuffle.testing`)
and the benchmark read every log of every application they start, and these are findings:

- an uncaught exception, in any thread;
- an ERROR whose text, its stack included, names the plugin's package;
- an executor lost.

A test that kills or corrupts on purpose declares what it expects (:class:`Expected`). The
rules are ``spark_log_rules.json``, which the JVM suites read too.

Where the logs are: each driver this package starts (:func:`pyspark_shuffle.sessions.
start_session`) also logs WARN and above to ``driver-<pid>.log`` in ``PYSPARK_SHUFFLE_LOG_DIR``
(default: a directory in the temp dir); a standalone worker puts each executor's log in
``<work dir>/<application id>/<executor id>/stderr``, where the work dir is
``$SPARK_HOME/work`` for ``local-cluster`` and the directories ``PYSPARK_SHUFFLE_WORK_DIRS``
names (``os.pathsep``-separated; the namespace cluster sets it) for a ``spark://`` master.
"""

from __future__ import annotations

import glob
import json
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

RULES_FILE = Path(__file__).with_name("spark_log_rules.json")
LOG_DIR_ENV = "PYSPARK_SHUFFLE_LOG_DIR"
WORK_DIRS_ENV = "PYSPARK_SHUFFLE_WORK_DIRS"

UNCAUGHT = "uncaught exception"
PLUGIN_ERROR = "plugin error"
EXECUTOR_LOST = "executor lost"


@dataclass(frozen=True)
class Rules:
    entry: "re.Pattern[str]"
    uncaught: Tuple["re.Pattern[str]", ...]
    plugin_frame: str
    error_levels: Tuple[str, ...]
    executor_lost: Tuple["re.Pattern[str]", ...]
    stack_lines: int
    after_executor_killed: Tuple[str, ...]

    @classmethod
    def load(cls, path: Path = RULES_FILE) -> "Rules":
        data = json.loads(path.read_text())
        return cls(
            entry=re.compile(data["entry"]),
            uncaught=tuple(re.compile(p) for p in data["uncaught"]),
            plugin_frame=data["plugin_frame"],
            error_levels=tuple(data["error_levels"]),
            executor_lost=tuple(re.compile(p) for p in data["executor_lost"]),
            stack_lines=int(data["stack_lines"]),
            after_executor_killed=tuple(data["after_executor_killed"]),
        )


RULES = Rules.load()


@dataclass(frozen=True)
class Finding:
    kind: str  # UNCAUGHT, PLUGIN_ERROR or EXECUTOR_LOST
    source: str  # "driver", "executor 1", with the file
    text: str  # the log entry: its first line and the start of its stack
    executor: Optional[str] = None  # EXECUTOR_LOST: which executor, where the line says

    @property
    def headline(self) -> str:
        return self.text.splitlines()[0] if self.text else ""

    def __str__(self) -> str:
        return f"{self.kind} in {self.source}: {self.headline}"


def _entries(text: str, rules: Rules) -> Iterable[Tuple[Optional[str], List[str]]]:
    """(level, lines) per log entry: a header line (its level), or an uncaught-exception line of
    the JVM's own handler (no level), and the lines up to the next such line."""
    level: Optional[str] = None
    lines: List[str] = []
    for line in text.splitlines():
        header = rules.entry.match(line)
        if header or any(p.search(line) for p in rules.uncaught):
            if lines:
                yield level, lines
            level, lines = (header.group(1) if header else None), [line]
        elif lines:
            lines.append(line)
    if lines:
        yield level, lines


def scan(text: str, source: str, rules: Rules = RULES) -> List[Finding]:
    """The findings in ``text``, a log (or the part of one read since last time)."""
    findings = []
    for level, lines in _entries(text, rules):
        head = lines[0]
        entry = "\n".join(lines[: rules.stack_lines + 1])
        lost = next((m for m in (p.search(head) for p in rules.executor_lost) if m), None)
        if any(p.search(head) for p in rules.uncaught):
            findings.append(Finding(UNCAUGHT, source, entry))
        elif lost is not None:
            executor = lost.group(1) if lost.re.groups else None
            findings.append(Finding(EXECUTOR_LOST, source, entry, executor))
        elif level in rules.error_levels and any(rules.plugin_frame in line for line in lines):
            findings.append(Finding(PLUGIN_ERROR, source, entry))
    return findings


@dataclass(frozen=True)
class Expected:
    """What a test causes on purpose: up to ``lost_executors`` executors lost per application
    (as each log reports them), and errors whose log entries match one of the ``errors``
    patterns (``re.search``, the entry's stack included)."""

    lost_executors: int = 0
    errors: Tuple[str, ...] = ()

    def with_killed(self, executors: int = 1) -> "Expected":
        """And ``executors`` more killed, with what their peers may log of them meanwhile."""
        errors = self.errors + tuple(p for p in RULES.after_executor_killed if p not in self.errors)
        return Expected(self.lost_executors + executors, errors)

    def unexpected(self, findings: Sequence[Finding]) -> List[Finding]:
        patterns = [re.compile(p) for p in self.errors]
        lost: Dict[str, set] = {}
        for f in findings:
            if f.kind == EXECUTOR_LOST:
                lost.setdefault(f.source, set()).add(f.executor)
        return [
            f
            for f in findings
            if not (f.kind == EXECUTOR_LOST and len(lost[f.source]) <= self.lost_executors)
            and not any(p.search(f.text) for p in patterns)
        ]


NOTHING = Expected()


def report(findings: Sequence[Finding], limit: int = 5) -> str:
    """The findings for a person: a count, then the first ``limit`` entries in full."""
    if not findings:
        return "Spark's logs: nothing found"
    shown = "\n\n".join(f"{f}\n{f.text}" for f in findings[:limit])
    more = f"\n\n... and {len(findings) - limit} more" if len(findings) > limit else ""
    return f"Spark's logs: {len(findings)} finding(s)\n{shown}{more}"


@dataclass(frozen=True)
class ApplicationLogs:
    """Where one application's driver and executors log."""

    app_id: str
    driver_log: Optional[str]
    work_dirs: Tuple[str, ...] = ()

    def files(self) -> Dict[str, str]:
        """path -> what wrote it ("driver", "executor 1"), of the files that exist now."""
        files = {}
        if self.driver_log and os.path.exists(self.driver_log):
            files[self.driver_log] = "driver"
        for work_dir in self.work_dirs:
            for path in sorted(glob.glob(os.path.join(work_dir, self.app_id, "*", "stderr"))):
                files[path] = f"executor {os.path.basename(os.path.dirname(path))}"
        return files

    def findings(self) -> List[Finding]:
        """Every finding in every one of its logs (the driver's whole file, which other
        applications of the same driver JVM may share)."""
        return [
            f for path, source in self.files().items() for f in scan(_read(path, 0)[0], f"{source} ({path})")
        ]

    def to_dict(self) -> Dict[str, Any]:
        return {"app_id": self.app_id, "driver_log": self.driver_log, "work_dirs": list(self.work_dirs)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ApplicationLogs":
        return cls(data["app_id"], data.get("driver_log"), tuple(data.get("work_dirs") or ()))


def scan_files(files: Mapping[str, str]) -> List[Finding]:
    """The findings in whole files, path -> what wrote it."""
    return [f for path, source in files.items() for f in scan(_read(path, 0)[0], f"{source} ({path})")]


def _read(path: str, start: int) -> Tuple[str, int]:
    """The text of ``path`` from byte ``start`` to its last complete line, and where that ends."""
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            data = handle.read()
    except OSError:
        return "", start
    end = data.rfind(b"\n") + 1
    return data[:end].decode("utf-8", "replace"), start + end


@dataclass
class LogWatch:
    """The logs of every application watched, and how far each file was read: each line is
    read once, by the first :meth:`read_new` after it was written."""

    applications: List[ApplicationLogs] = field(default_factory=list)
    _read_to: Dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, logs: ApplicationLogs) -> None:
        with self._lock:
            if logs not in self.applications:
                self.applications.append(logs)

    def read_new(self) -> List[Finding]:
        """The findings in what every watched log gained since the last call."""
        with self._lock:
            files: Dict[str, str] = {}
            for app in self.applications:
                files.update(app.files())
            findings = []
            for path, source in files.items():
                text, end = _read(path, self._read_to.get(path, 0))
                self._read_to[path] = end
                findings.extend(scan(text, f"{source} ({path})"))
            return findings


#: The applications this process started or ran in its child processes.
WATCH = LogWatch()


def log_dir() -> str:
    configured = os.environ.get(LOG_DIR_ENV, "").strip()
    directory = configured or os.path.join(tempfile.gettempdir(), "pyspark-shuffle-logs")
    os.makedirs(directory, exist_ok=True)
    return directory


def work_dirs_of(master: str, spark_home: Optional[str]) -> Tuple[str, ...]:
    """The work dirs of the workers that run ``master``'s executors, as far as known here."""
    if master.startswith("local-cluster"):
        return (os.path.join(spark_home, "work"),) if spark_home else ()
    if master.startswith("spark://"):
        return tuple(d for d in os.environ.get(WORK_DIRS_ENV, "").split(os.pathsep) if d.strip())
    return ()  # local mode: the executor is the driver


def of_session(spark: Any) -> ApplicationLogs:
    """Where the application of ``spark`` logs; its driver then logs WARN and above to a file of
    its own too, and the application is watched (:data:`WATCH`)."""
    from ._jvm import driver_env, log_driver_to

    sc = getattr(spark, "sparkContext", spark)
    path = os.path.join(log_dir(), f"driver-{os.getpid()}.log")
    log_driver_to(sc, path)
    logs = ApplicationLogs(sc.applicationId, path, work_dirs_of(sc.master, driver_env(sc, "SPARK_HOME")))
    WATCH.add(logs)
    return logs
