"""When a benchmark run's kill fires (``--kill``), against a scripted status tracker (no JVM)."""

from types import SimpleNamespace

import pytest

from pyspark_shuffle.bench.faults import Kill, job_progress, reached


def test_reached_after_map_and_mid_reduce():
    assert not reached("after-map", [(4, 3), (6, 0)])
    assert reached("after-map", [(4, 4), (6, 0)])
    assert not reached("mid-reduce", [(4, 4), (6, 2)])
    assert reached("mid-reduce", [(4, 4), (6, 3)])
    # Every map stage must be done; a job of one stage has no reduce stage to kill in.
    assert not reached("mid-reduce", [(4, 4), (2, 1), (6, 5)])
    assert not reached("after-map", [(4, 4)])
    with pytest.raises(ValueError, match="after-map, mid-reduce"):
        reached("mid-map", [(4, 4), (6, 3)])


class Tracker:
    """A PySpark StatusTracker whose job of group "g" (stages 3 and 4) progresses each poll."""

    def __init__(self, steps):
        self.steps, self.polls = steps, 0

    def getJobIdsForGroup(self, group):
        return [7] if group == "g" else []

    def getJobInfo(self, job_id):
        return SimpleNamespace(stageIds=[4, 3])

    def getStageInfo(self, stage_id):
        if stage_id == 3:
            self.polls += 1
        maps, reduces = self.steps[min(self.polls, len(self.steps)) - 1]
        tasks, done = (4, maps) if stage_id == 3 else (6, reduces)
        return SimpleNamespace(numTasks=tasks, numCompletedTasks=done)


def test_job_progress_in_stage_order():
    assert job_progress(Tracker([(2, 0)]), "g") == [[(4, 2), (6, 0)]]
    assert job_progress(Tracker([(2, 0)]), "other") == []


def test_kill_fires_once_at_its_point_and_records_it():
    killed = []
    tracker = Tracker([(1, 0), (4, 0), (4, 2), (4, 3), (4, 6)])
    with Kill(tracker, "g", "mid-reduce", 2, lambda: killed.append(1) or [4242], poll_s=0.001) as kill:
        while not killed:
            pass
    assert killed == [1] and tracker.polls == 4
    assert kill.record()["pids"] == [4242] and kill.record()["worker"] == 2
    assert kill.record()["at_s"] is not None and kill.failure() is None


def test_a_kill_not_made_fails_the_run_with_the_reason():
    with Kill(Tracker([(1, 0)]), "g", "after-map", 2, lambda: [1], poll_s=0.001) as kill:
        pass
    assert "ended before that point" in kill.failure() and kill.record()["at_s"] is None
    with Kill(Tracker([(4, 0)]), "g", "after-map", 3, lambda: [], poll_s=0.001) as kill:
        while kill.at_s is None:
            pass
    assert "no executor on worker 3" in kill.failure()

    def broken():
        raise OSError("no such cluster")

    with Kill(Tracker([(4, 0)]), "g", "after-map", 2, broken, poll_s=0.001) as kill:
        while kill.error is None:
            pass
    assert kill.failure() == "the kill at after-map failed: OSError: no such cluster"
