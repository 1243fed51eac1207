"""The skew report of a known DummyRDD (Zipf alpha = 2): from the running session and from its
event log, alpha within 0.2 of 2 and partition sizes that add up to the shuffle's bytes."""

import pytest
from status_store import stage_totals

from pyspark_shuffle import DummyRDD
from pyspark_shuffle.report import cli, from_event_log, skew_report
from pyspark_shuffle.sessions import PLUGIN, start_session

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def event_log_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("event-log")


@pytest.fixture(scope="module")
def run(event_log_dir):
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": str(event_log_dir)}
    spark = start_session(PLUGIN, conf)
    try:
        DummyRDD(spark, size="16m", skew=2.0, partition_size="512k", seed=9).run()
        yield spark, stage_totals(spark, "shuffleWriteBytes")
    finally:
        spark.stop()


def test_live_report_of_a_zipf_2_shuffle(run, tmp_path):
    spark, written = run
    (view,) = skew_report(spark, str(tmp_path))
    assert len(view.partition_bytes) == 32 and view.partitions_from == "reduce tasks"
    assert view.total_bytes == written > 16 << 20
    assert abs(view.alpha - 2.0) <= 0.2, view.alpha
    assert sum(view.bytes_by_source.values()) == written
    assert len(view.tasks) == 32 and all(t["limitMax"] > 0 for t in view.tasks)
    # Two executors: each sends the other what its tasks did not read themselves.
    assert view.remote_bytes_by_source.keys() == view.rate_by_source.keys() == {"0", "1"}
    assert all(0 < view.remote_bytes_by_source[s] <= view.bytes_by_source[s] for s in ("0", "1"))
    assert all(seconds > 0 for seconds in view.link_seconds_by_source.values())
    assert set(view.host_by_source) == {"0", "1"}
    # The map stage's 32 tasks and the reduce stage's, with the CPU Spark's task metrics add up.
    assert view.cpu["map"]["tasks"] == view.cpu["reduce"]["tasks"] == 32
    assert 0 < view.cpu["map"]["executor_cpu_s"] <= stage_totals(spark, "executorCpuTime") / 1e9
    assert len(list(tmp_path.glob("*.png"))) == 1


def test_event_log_report_equals_the_live_one(run, event_log_dir, tmp_path, capsys):
    spark, _ = run
    (live,) = skew_report(spark)
    spark.stop()  # the event log is complete once the application ends
    (logged,) = [v for v in from_event_log(event_log_dir) if v.label.endswith("shuffle 0, stage 1")]
    assert logged.partition_bytes == live.partition_bytes
    assert logged.bytes_by_source == live.bytes_by_source
    assert logged.link_seconds_by_source == live.link_seconds_by_source
    assert logged.cpu == live.cpu and logged.cpu["reduce"]["executor_cpu_s"] > 0
    assert cli.main([str(event_log_dir), "--out", str(tmp_path)]) == 0
    assert f"{logged.alpha:.2f}" in capsys.readouterr().out
