"""The fault of a benchmark run (``--kill``): the executor of one namespace-cluster worker
SIGKILLed at a point of the dummy workload's job, which a thread finds by polling Spark's
status tracker while the workload runs."""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

NO_KILL = "none"
#: after-map: every map task has finished (the reduce stage starts); mid-reduce: half the reduce
#: tasks have.
KILL_POINTS = ("after-map", "mid-reduce")

#: (tasks, completed tasks) of a job's stages in stage order: the map stages, then the result stage.
StageProgress = Sequence[Tuple[int, int]]


def reached(point: str, stages: StageProgress) -> bool:
    """Whether the job whose stages are ``stages`` has reached ``point``."""
    if len(stages) < 2:
        return False
    maps, (reduce_tasks, reduced) = stages[:-1], stages[-1]
    maps_done = all(completed >= tasks for tasks, completed in maps)
    if point == "after-map":
        return maps_done
    if point == "mid-reduce":
        return maps_done and reduced * 2 >= reduce_tasks
    raise ValueError(f"unknown kill point {point!r}; choose from {', '.join(KILL_POINTS)}")


def job_progress(tracker: Any, group: str) -> List[StageProgress]:
    """The stages of each job of ``group`` (a PySpark StatusTracker) as :data:`StageProgress`."""
    jobs = []
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        if info is None:
            continue
        stages = []
        for stage_id in sorted(info.stageIds):
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                stages.append((stage.numTasks, stage.numCompletedTasks))
        jobs.append(stages)
    return jobs


class Kill:
    """Runs (as a context manager) a thread that calls ``kill()`` once some job of ``group`` has
    reached ``point``; :meth:`record` tells what it did."""

    def __init__(
        self,
        tracker: Any,
        group: str,
        point: str,
        worker: int,
        kill: Callable[[], List[int]],
        poll_s: float = 0.02,
    ) -> None:
        self.tracker, self.group, self.point, self.worker = tracker, group, point, worker
        self._kill, self._poll_s = kill, poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="bench-kill", daemon=True)
        self._began = 0.0
        self.at_s: Optional[float] = None
        self.pids: List[int] = []
        self.error: Optional[str] = None

    def __enter__(self) -> "Kill":
        self._began = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        try:
            # The wait is the poll interval: the status tracker has no event to await.
            while not self._stop.wait(self._poll_s):
                if any(reached(self.point, stages) for stages in job_progress(self.tracker, self.group)):
                    self.at_s = round(time.perf_counter() - self._began, 3)
                    self.pids = self._kill()
                    return
        except Exception as error:  # reported in the run's record; the workload goes on
            self.error = f"{type(error).__name__}: {error}"

    def record(self) -> Dict[str, Any]:
        """``{"point", "worker", "at_s" (seconds into the workload; None: not reached), "pids"}``."""
        return {"point": self.point, "worker": self.worker, "at_s": self.at_s, "pids": self.pids}

    def failure(self) -> Optional[str]:
        """Why the run does not show the fault it was to inject (None: it does)."""
        if self.error:
            return f"the kill at {self.point} failed: {self.error}"
        if self.at_s is None:
            return f"the kill at {self.point} was not made: the workload ended before that point"
        if not self.pids:
            return f"the kill at {self.point} found no executor on worker {self.worker}"
        return None
