"""The faults a namespace cluster takes on command: a worker's link cut and healed, its
executors killed."""

from __future__ import annotations

import contextlib
import os
import signal
from typing import List

from . import plan, system
from .state import ClusterState, require
from .system import ClusterError


def _worker_number(cluster: ClusterState, worker: int) -> int:
    if not 1 <= worker <= cluster.spec.workers:
        raise ClusterError(f"worker {worker} is not between 1 and {cluster.spec.workers}")
    return worker


def set_link(name: str, worker: int, connected: bool) -> None:
    """``cut`` (connected=False) or ``heal`` worker's link."""
    cluster = require(name)
    for step in plan.cut_steps(cluster.spec, _worker_number(cluster, worker), up=connected):
        system.run(step.argv)
    cut = set(cluster.cut)
    (cut.discard if connected else cut.add)(worker)
    cluster.cut = sorted(cut)
    cluster.save()


def executor_pids(cluster: ClusterState, worker: int) -> List[int]:
    pids = system.netns_pids(plan.netns(cluster.spec, worker))
    return sorted(system.processes_with(plan.EXECUTOR_CLASS_MARK, pids))


def kill_executors(name: str, worker: int) -> List[int]:
    """SIGKILL the executor JVMs of ``worker``; their pids."""
    cluster = require(name)
    pids = executor_pids(cluster, _worker_number(cluster, worker))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids
