"""Running a ``python -m module`` child process: one fresh driver JVM per Spark application.

A shuffle manager is fixed when a SparkContext starts, and a process holds one SparkContext at a
time, so every side of an A/B comparison and every benchmark run is a child process of its own
(:mod:`pyspark_shuffle.testing.compare`, :mod:`pyspark_shuffle.bench.runner`). The child gets
this interpreter, this ``sys.path`` and loopback networking; it runs in its own process group,
so a timeout ends the whole tree it started (its driver JVM and the local-cluster executors),
not only the Python process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO, Any, Callable, Mapping, Optional, Sequence


@dataclass
class ChildResult:
    returncode: Optional[int]  # None when the child was killed for its timeout
    output: str  # stdout and stderr, interleaved
    seconds: float
    timed_out: bool

    def tail(self, lines: int = 60) -> str:
        return "\n".join(self.output.splitlines()[-lines:])


def child_env(extra: Optional[Mapping[str, str]] = None) -> dict:
    """The environment of a child: ours, with our ``sys.path`` as PYTHONPATH and loopback IP."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.update(extra or {})
    return env


def run_module(
    module: str, args: Sequence[str], timeout: float, env: Optional[Mapping[str, str]] = None
) -> ChildResult:
    """Run ``python -m module args...`` with :func:`child_env`, wait at most ``timeout`` seconds;
    on timeout kill the child's process group (everything it started) and report ``timed_out``."""
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", module, *args],
        env=dict(env) if env is not None else child_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(process)
        out, _ = process.communicate()
    except BaseException:  # KeyboardInterrupt: do not leave the child's JVMs behind
        _kill_group(process)
        process.communicate()
        raise
    return ChildResult(
        returncode=None if timed_out else process.returncode,
        output=(out or b"").decode("utf-8", "replace"),
        seconds=time.monotonic() - started,
        timed_out=timed_out,
    )


def _kill_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the group start_new_session gave this child
    except ProcessLookupError:
        pass


def child_main(
    run: Callable[[Any], Any],
    load: Callable[[IO], Any],
    dump: Callable[[Any, IO], None],
    binary: bool,
) -> Callable[[list], int]:
    """The ``main(argv)`` of a child module: ``IN OUT`` paths; reads the job from IN with
    ``load``, runs it, writes what ``run`` returns to OUT with ``dump``."""

    def main(argv: list) -> int:
        in_path, out_path = argv
        mode = "b" if binary else ""
        with open(in_path, "r" + mode) as handle:
            job = load(handle)
        outcome = run(job)
        with open(out_path, "w" + mode) as handle:
            dump(outcome, handle)
        return 0

    return main
