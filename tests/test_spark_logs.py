"""The log scanner every test and benchmark run ends with (no JVM): the shared cases, which the
JVM suites' scanner is tested on too, what a test may declare, and reading each line once."""

import json
from pathlib import Path

import pytest

from pyspark_shuffle import spark_logs
from pyspark_shuffle.spark_logs import (
    EXECUTOR_LOST,
    PLUGIN_ERROR,
    UNCAUGHT,
    ApplicationLogs,
    Expected,
    LogWatch,
)

CASES = json.loads((Path(__file__).resolve().parent / "shared" / "spark_log_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_shared_cases(case):
    found = spark_logs.scan(case["log"], "executor 1")
    assert [{"kind": f.kind, **({"executor": f.executor} if f.executor else {})} for f in found] == case[
        "findings"
    ]


def test_a_finding_carries_its_stack_and_names_its_source():
    (finding,) = spark_logs.scan(CASES[0]["log"], "executor 1 (stderr)")
    assert finding.source == "executor 1 (stderr)"
    assert finding.headline.endswith("Uncaught exception in thread executor-heartbeater")
    assert "FetchMetricsAccumulator.isZero" in finding.text
    assert "Finished task" not in finding.text
    assert str(finding).startswith("uncaught exception in executor 1 (stderr): ")


def _finding(kind, text="26/11/26 17:00:00 ERROR X: y", executor=None):
    return spark_logs.Finding(kind, "driver", text, executor)


def test_expected_losses_and_errors_are_not_reported():
    lost = [_finding(EXECUTOR_LOST, executor="1"), _finding(EXECUTOR_LOST, executor="1")]
    injected = _finding(PLUGIN_ERROR, "ERROR Executor: Exception in task\nRuntimeError: injected failure")
    other = _finding(UNCAUGHT)
    assert spark_logs.NOTHING.unexpected(lost + [injected, other]) == lost + [injected, other]
    expected = Expected(lost_executors=1, errors=(r"injected failure",))
    assert expected.unexpected(lost + [injected, other]) == [other]
    two_lost = lost + [_finding(EXECUTOR_LOST, executor="2")]
    assert Expected(lost_executors=1).unexpected(two_lost) == two_lost
    # Counted per log: another application losing its own executor 1 is one more of its own.
    elsewhere = spark_logs.Finding(EXECUTOR_LOST, "driver (other)", "x", "1")
    assert Expected(lost_executors=1).unexpected(lost + [elsewhere]) == []
    killed = Expected().with_killed()
    assert killed.lost_executors == 1 and "ExecutorDeadException" in killed.errors
    assert killed.with_killed().errors == killed.errors and killed.with_killed().lost_executors == 2


def test_report_shows_the_first_entries_in_full():
    findings = [
        _finding(UNCAUGHT, f"26/11/26 17:00:0{i} ERROR Utils: Uncaught exception {i}\n\tat a.b")
        for i in range(7)
    ]
    text = spark_logs.report(findings, limit=2)
    assert text.startswith("Spark's logs: 7 finding(s)")
    assert "Uncaught exception 1\n\tat a.b" in text and "Uncaught exception 2" not in text
    assert text.endswith("... and 5 more")
    assert spark_logs.report([]) == "Spark's logs: nothing found"


def test_an_application_is_its_driver_log_and_its_executors_stderr(tmp_path):
    driver = tmp_path / "driver-1.log"
    driver.write_text("26/11/26 17:10:00 ERROR TaskSchedulerImpl: Lost executor 1 on h: gone\n")
    for app, executor in (("app-1", "0"), ("app-1", "1"), ("app-2", "0")):
        (tmp_path / "work" / app / executor).mkdir(parents=True)
        (tmp_path / "work" / app / executor / "stderr").write_text(CASES[0]["log"])
    logs = ApplicationLogs("app-1", str(driver), (str(tmp_path / "work"),))
    assert sorted(logs.files().values()) == ["driver", "executor 0", "executor 1"]
    assert sorted(f.kind for f in logs.findings()) == [EXECUTOR_LOST, UNCAUGHT, UNCAUGHT]
    assert ApplicationLogs.from_dict(json.loads(json.dumps(logs.to_dict()))) == logs


def test_a_watch_reads_each_complete_line_once(tmp_path):
    driver = tmp_path / "driver.log"
    driver.write_text("26/11/26 17:00:00 INFO X: started\n")
    watch = LogWatch()
    watch.add(ApplicationLogs("app-1", str(driver), (str(tmp_path / "work"),)))
    assert watch.read_new() == []
    with driver.open("a") as out:
        out.write("26/11/26 17:00:01 ERROR Utils: Uncaught exception in thread x\n")
        out.write("26/11/26 17:00:02 ERROR TaskSchedulerImpl: Lost exec")  # still being written
    assert [f.kind for f in watch.read_new()] == [UNCAUGHT]
    with driver.open("a") as out:
        out.write("utor 3 on h: killed\n")
    # An executor that started since: read from its start.
    (tmp_path / "work" / "app-1" / "3").mkdir(parents=True)
    (tmp_path / "work" / "app-1" / "3" / "stderr").write_text(CASES[1]["log"])
    found = watch.read_new()
    assert [(f.kind, f.executor) for f in found] == [(EXECUTOR_LOST, "3"), (UNCAUGHT, None)]
    assert watch.read_new() == []


def test_work_dirs_by_master(monkeypatch):
    monkeypatch.delenv(spark_logs.WORK_DIRS_ENV, raising=False)
    assert spark_logs.work_dirs_of("local-cluster[2,1,1024]", "/spark") == ("/spark/work",)
    assert spark_logs.work_dirs_of("spark://10.0.0.1:7077", "/spark") == ()
    monkeypatch.setenv(spark_logs.WORK_DIRS_ENV, "/w1:/w2")
    assert spark_logs.work_dirs_of("spark://10.0.0.1:7077", "/spark") == ("/w1", "/w2")
    assert spark_logs.work_dirs_of("local[2]", "/spark") == ()
