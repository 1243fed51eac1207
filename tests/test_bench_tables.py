"""Run plan, run records, medians, ratios and the table of the benchmark harness (no JVM)."""

import dataclasses
import json

import pytest
from bench_runs import bench_run

from pyspark_shuffle.bench import runner
from pyspark_shuffle.bench.command_line import parse_args
from pyspark_shuffle.bench.runner import empty_record, plan, run_all
from pyspark_shuffle.bench.tables import (
    format_table,
    kill_table,
    logs_summary,
    median,
    result_mismatches,
    summarize,
)
from pyspark_shuffle.bench_run import FIELD_NAMES, BenchRun


def record(manager, skew, wall, workload="dummy", status="ok", peak=100 << 20, result=None):
    return bench_run(
        manager=manager,
        workload=workload,
        skew=skew,
        status=status,
        wall_s=wall if status == "ok" else None,
        map_stage_s=wall / 2,
        reduce_stage_s=wall / 3,
        shuffle_write_bytes=64 << 20,
        shuffle_read_bytes=64 << 20,
        spark_fetch_wait_ms=1500,
        max_reduce_partition_bytes=8 << 20,
        peak_executor_memory_bytes=peak,
        result=result if result is not None else {"checksum": "abc"},
    )


def test_alternation_order():
    config = parse_args(
        ["--managers", "sort,adaptive", "--skew", "0,2", "--repeat", "2", "--workload", "dummy,join"]
    )
    order = [(r.repeat, r.workload, r.skew, r.manager.label) for r in plan(config)]
    assert [r.index for r in plan(config)] == list(range(16))
    assert order[:8] == [
        (0, "dummy", 0.0, "sort"),
        (0, "dummy", 0.0, "adaptive"),
        (0, "dummy", 2.0, "sort"),
        (0, "dummy", 2.0, "adaptive"),
        (0, "join", 0.0, "sort"),
        (0, "join", 0.0, "adaptive"),
        (0, "join", 2.0, "sort"),
        (0, "join", 2.0, "adaptive"),
    ]
    # the next repeat starts with the other manager, and still alternates
    assert [o[3] for o in order[8:]] == ["adaptive", "sort"] * 4
    assert all(order[i][3] != order[i + 1][3] for i in range(0, 16, 2))


def test_median_and_ratio():
    records = [
        record("sort", 0, 10.0),
        record("adaptive", 0, 6.0),
        record("sort", 0, 12.0),
        record("adaptive", 0, 9.0),
        record("sort", 0, 11.0),
        record("adaptive", 0, 7.0),
        record("sort", 2, 20.0),
        record("adaptive", 2, 5.0, status="failed"),
        record("adaptive", 2, 10.0),
    ]
    summaries = {(s.workload, s.skew, s.manager): s for s in summarize(records)}
    sort0, adaptive0 = summaries[("dummy", 0.0, "sort")], summaries[("dummy", 0.0, "adaptive")]
    assert sort0.medians["wall_s"] == 11.0 and adaptive0.medians["wall_s"] == 7.0
    assert sort0.ratio_to_sort == pytest.approx(1.0)
    assert adaptive0.ratio_to_sort == pytest.approx(7.0 / 11.0)
    adaptive2 = summaries[("dummy", 2.0, "adaptive")]
    assert (adaptive2.runs, adaptive2.ok) == (2, 1)  # the failed run does not count
    assert adaptive2.medians["wall_s"] == 10.0 and adaptive2.ratio_to_sort == pytest.approx(0.5)
    assert median([None, 1, 3]) == 2 and median([None]) is None


def test_no_sort_means_no_ratio():
    summaries = summarize([record("adaptive", 0, 3.0)])
    assert summaries[0].ratio_to_sort is None
    assert "-" in format_table(summaries).splitlines()[2]


def test_table():
    text = format_table(summarize([record("sort", 0, 10.0), record("adaptive", 0, 5.0)]))
    lines = text.splitlines()
    assert lines[0].split()[:6] == ["workload", "skew", "manager", "ok", "wall", "s"]
    assert len(lines) == 4
    assert "0.50x" in lines[3] and "1.00x" in lines[2]
    assert "64.0" in lines[3] and "8.0" in lines[3] and "1.50" in lines[3] and "100" in lines[3]


def test_table_shows_the_cold_runs_beside_the_warm_ones():
    warm = [record("sort", 0, 10.0), record("adaptive", 0, 5.0)]
    assert "cold" not in format_table(summarize(warm))
    for r, (wall, cpu) in zip(warm, [(20.0, 8.0), (30.0, 16.0)]):
        r.cold = {"wall_s": wall, "map_cpu_s": cpu, "reduce_cpu_s": 1.0}
    summaries = summarize(warm)
    assert summaries[1].cold_to_sort["wall_s"] == 1.5 and summaries[1].cold_to_sort["map_cpu_s"] == 2.0
    lines = format_table(summaries).splitlines()
    assert "cold wall s" in lines[0] and "cold map CPU s" in lines[0]
    assert lines[3].split()[-4:] == ["30.00", "1.50x", "16.00", "2.00x"], lines[3]


def test_result_mismatches():
    same = [record("sort", 0, 1.0), record("adaptive", 0, 1.0)]
    assert result_mismatches(same) == []
    differ = same + [record("adaptive", 0, 1.0, result={"checksum": "xyz"})]
    (problem,) = result_mismatches(differ)
    assert "dummy skew=0" in problem and "xyz" in problem


HEARTBEATER = (
    "26/11/26 17:05:50 ERROR Utils: Uncaught exception in thread executor-heartbeater\n"
    "java.lang.NullPointerException\n\tat org.apache.spark.shuffle.adaptive.metrics.X.isZero(X.scala:1)\n"
)
LOST = (
    "26/11/26 17:10:00 ERROR TaskSchedulerImpl: Lost executor 1 on 10.0.0.2: Command exited with code 137\n"
)


def _logged_run(tmp_path, stderr, driver):
    (tmp_path / "work" / "app-1" / "1").mkdir(parents=True)
    (tmp_path / "work" / "app-1" / "1" / "stderr").write_text(stderr)
    (tmp_path / "driver.log").write_text(driver)
    return {
        "logs": {
            "app_id": "app-1",
            "driver_log": str(tmp_path / "driver.log"),
            "work_dirs": [str(tmp_path / "work")],
        }
    }


def test_a_run_records_what_its_logs_hold_but_what_it_caused(tmp_path):
    outcome = _logged_run(tmp_path, HEARTBEATER, LOST)
    found = runner.log_findings(outcome, killed=False)
    assert [f.splitlines()[0] for f in found] == [
        "executor lost in driver (%s): %s" % (tmp_path / "driver.log", LOST.strip()),
        "uncaught exception in executor 1 (%s): %s"
        % (tmp_path / "work" / "app-1" / "1" / "stderr", HEARTBEATER.splitlines()[0]),
    ]
    assert "X.isZero" in found[1]
    # A run that kills an executor on purpose expects to lose it, not the heartbeater's exception.
    assert len(runner.log_findings(outcome, killed=True)) == 1
    assert runner.log_findings({}, killed=False) == []


def test_logs_summary():
    runs = [
        bench_run(index=0, workload="groupby", manager="sort", log_findings=[]),
        bench_run(index=1, workload="groupby", manager="adaptive", log_findings=["a\nstack a", "b"]),
    ]
    assert logs_summary(runs[:1]) == "Spark's logs: nothing found in 1 runs (driver and every executor)"
    text = logs_summary(runs)
    assert text.startswith("Spark's logs: 2 finding(s) in 1 of 2 runs\n- run 2 (groupby adaptive): 2")
    assert text.endswith("a\nstack a\nb")


def test_run_records_schema_and_json(tmp_path, capsys):
    config = parse_args(
        [
            "--managers",
            "sort,adaptive:in_flight_increment=4m",
            "--skew",
            "0,1",
            "--size",
            "16m",
            "--partition-size",
            "4m",
            "--repeat",
            "1",
            "--json",
            str(tmp_path / "out.json"),
        ]
    )

    def fake_run(config, spec):  # stands in for the child process
        rec = empty_record(config, spec)
        if spec.skew == 1.0 and spec.manager.kind == "adaptive":
            rec.error = "ExecutorLostFailure: OOM"
            return rec
        rec.take({"wall_s": 1.0 + spec.index, "shuffle_write_bytes": 16 << 20, "ignored_by_records": 1})
        rec.status = "ok"
        rec.plugin = {"requests": 3} if spec.manager.kind == "adaptive" else {}
        return rec

    lines = []
    runs = run_all(config, {"cpu_count": 2}, log=lines.append, runner=fake_run)
    assert len(runs) == 4 and len(lines) == 8
    assert "FAILED (ExecutorLostFailure: OOM)" in lines[-1]
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["env"] == {"cpu_count": 2}
    assert [r["status"] for r in data["runs"]] == ["ok", "ok", "ok", "failed"]
    for run in data["runs"]:
        assert list(run) == list(FIELD_NAMES)
        assert BenchRun.from_json(run).to_json() == run
        assert run["options"] == ({"in_flight_increment": "4m"} if run["manager_kind"] == "adaptive" else {})
        assert run["size_bytes"] == 16 << 20 and run["repeat"] == 0
        assert isinstance(run["plugin"], dict)
    assert data["runs"][3]["error"] == "ExecutorLostFailure: OOM" and data["runs"][3]["wall_s"] is None


def test_harness_conf_lets_conf_override():
    config = parse_args(
        ["--conf", "spark.sql.adaptive.enabled=true", "--size", "64m", "--partition-size", "8m"]
    )
    conf = runner.harness_conf(config)
    assert conf["spark.sql.adaptive.enabled"] == "true"
    assert conf["spark.sql.shuffle.partitions"] == "8"
    assert conf["spark.executor.metrics.pollingInterval"] == "100ms"
    assert conf["spark.ui.enabled"] == "true"


def test_sql_workloads_run_with_aqe_and_host_local_reads_on_local_cluster():
    config = parse_args(["--workload", "sql,coalesced,dummy", "--size", "64m", "--partition-size", "8m"])
    sql, coalesced, dummy = (runner.harness_conf(config, w) for w in ("sql", "coalesced", "dummy"))
    assert sql["spark.sql.adaptive.enabled"] == "true" and sql["spark.sql.shuffle.partitions"] == "200"
    assert coalesced["spark.sql.shuffle.partitions"] == "2100"
    assert dummy["spark.sql.adaptive.enabled"] == "false" and dummy["spark.sql.shuffle.partitions"] == "8"
    assert all(c["spark.shuffle.readHostLocalDisk"] == "true" for c in (sql, coalesced, dummy))
    # --conf still has the last word.
    overridden = parse_args(["--workload", "sql", "--conf", "spark.sql.adaptive.enabled=false"])
    assert runner.harness_conf(overridden, "sql")["spark.sql.adaptive.enabled"] == "false"
    cluster = parse_args(["--master", "spark://10.0.0.1:7077"])
    assert "spark.shuffle.readHostLocalDisk" not in runner.harness_conf(cluster, "dummy")


def test_push_table_medians_and_absence():
    from pyspark_shuffle.bench.tables import push_table

    mib = 1 << 20

    def run(merged, chunks, requests, status="ok"):
        return bench_run(
            status=status,
            workload="dummy",
            skew=2.0,
            manager="adaptive:mode=push",
            plugin={
                "bytes_by_transport": {"local": 10 * mib, "netty": 30 * mib},
                "bytes_from_stores": merged * mib,
                "blocks_from_stores": 8 * chunks,
                "chunks_read": chunks,
                "requests": requests,
                "chunk_fallbacks": 1,
                "bytes_crossed_twice": merged * mib // 2,
                "stored_reduce_tasks": chunks,
                "stored_reduce_tasks_on_owner": chunks - 1,
                "bytes_at_owner": merged * mib * 3 // 4,
            },
            # Two shuffles' summaries: merged by the map stages' end over their bytes.
            push={
                "0": {"merged_bytes": merged, "shuffle_bytes": 100},
                "1": {"merged_bytes": merged, "shuffle_bytes": 100},
            },
        )

    table = push_table(
        [run(10, 5, 40), run(20, 10, 50), run(30, 20, 70), run(99, 99, 99, status="failed")]
    ).splitlines()
    assert table[0].split()[:5] == ["workload", "skew", "manager", "merged", "MiB"]
    assert table[2].split() == [
        "dummy",
        "2",
        "adaptive:mode=push",
        "20.0",
        "0.50",
        "0.20",
        "10",
        "8.0",
        "50",
        "1",
        "10.0",
        "0.90",
        "0.75",
    ]
    pulled = bench_run(
        status="ok",
        workload="w",
        manager="adaptive:mode=push",
        plugin={"chunks_read": 0, "bytes_from_stores": 0},
    )
    assert push_table([pulled]) is None


def test_kill_table_compares_each_manager_with_itself_unharmed():
    def killed(manager, wall, maps, point="mid-reduce"):
        return dataclasses.replace(
            record(manager, 0, wall),
            kill=point,
            fault={"point": point, "worker": 2, "at_s": wall / 2, "pids": [1]},
            map_tasks_rerun=maps,
            reduce_tasks_rerun=4,
        )

    records = [
        record("sort", 0, 10.0),
        record("push", 0, 20.0),
        killed("sort", 14.0, 16),
        killed("sort", 13.0, 16),
        killed("sort", 15.0, 17),
        killed("push", 20.5, 0),
        killed("push", 21.0, 0, point="after-map"),
    ]
    assert kill_table([record("sort", 0, 10.0)]) is None
    lines = kill_table(records).splitlines()
    assert lines[0].split() == [
        "workload",
        "skew",
        "manager",
        "wall",
        "s",
        "vs",
        "no",
        "kill",
        "killed",
        "at",
        "s",
        "maps",
        "rerun",
        "reduce",
        "tasks",
        "rerun",
    ]
    assert lines[2].split() == ["dummy", "kill=mid-reduce", "0", "sort", "14.00", "1.40x", "7.0", "16", "4"]
    assert lines[3].split() == ["dummy", "kill=mid-reduce", "0", "push", "20.50", "1.02x", "10.2", "0", "4"]
    assert lines[4].split()[:6] == ["dummy", "kill=after-map", "0", "push", "21.00", "1.05x"]
    # The main table keeps each kill point apart; results must agree across all of them.
    assert [s.workload for s in summarize(records)] == ["dummy"] * 2 + ["dummy kill=mid-reduce"] * 2 + [
        "dummy kill=after-map"
    ]
    assert result_mismatches(records) == []


def test_memory_table_compares_the_executor_that_held_most_with_sort():
    from pyspark_shuffle.bench.one_run import fetch_memory
    from pyspark_shuffle.bench.tables import memory_table

    mib = 1 << 20

    def run(manager, wall, pooled, held=None, episodes=0, deferrals=0, reruns=0, store=None):
        probe = {
            "1": {
                "netty_pooled_bytes": pooled * mib,
                "netty_direct_bytes": 2 * pooled * mib,
                "netty_oom_episodes": episodes,
            }
        }
        probe["0"] = {"netty_pooled_bytes": mib, "netty_direct_bytes": mib, "netty_oom_episodes": episodes}
        plugin = (
            {
                "1": {
                    "executor_fetch_peak_bytes": held * mib,
                    "combine_memory_peak_bytes": 2 * held * mib,
                    "direct_memory_deferrals": deferrals,
                }
            }
            if held
            else {}
        )
        heap = 100 if held is None else 110
        series = (
            {
                "1": {
                    "bucket_ms": 250,
                    "start_ms": [0, 250],
                    "store_bytes": {"max": [store * mib, 0], "mean": [0, 0]},
                }
            }
            if store
            else None
        )
        spark_peaks = {"1": {"heap_peak_bytes": heap * mib, "rss_peak_bytes": 300 * mib}, "driver": {}}
        return bench_run(
            status="ok",
            workload="slowreduce",
            manager=manager,
            wall_s=wall,
            map_tasks_rerun=0,
            reduce_tasks_rerun=reruns,
            fetch_memory=fetch_memory(probe, plugin, spark_peaks, series=series),
        )

    records = [
        run("sort", 10.0, 64, episodes=1, reruns=2),
        run("sort", 12.0, 80, episodes=3, reruns=4),
        # Its merge store held 40 MiB at its peak, on executor 1.
        run("adaptive", 11.0, 16, held=12, deferrals=5, store=40),
    ]
    # The driver is no executor; an executor the probe missed has no figures.
    assert set(records[0].fetch_memory) == {"0", "1"}
    assert records[2].fetch_memory["0"]["plugin_fetch_bytes"] is None
    table = memory_table(records).splitlines()
    assert table[0].split()[:4] == ["workload", "skew", "manager", "wall"]
    assert table[2].split() == [
        "slowreduce",
        "0",
        "sort",
        "11.00",
        "1.00x",
        "72.0",
        "1.00x",
        "144.0",
        "-",
        "-",
        "300",
        "1.00x",
        "100",
        "1.00x",
        "-",
        # Both executors' episodes: medians of 2 and 6.
        "4",
        "3",
    ]
    assert table[3].split() == [
        "slowreduce",
        "0",
        "adaptive",
        "11.00",
        "1.00x",
        "16.0",
        "0.22x",
        "32.0",
        "12.0",
        "24.0",
        "300",
        "1.00x",
        "110",
        "1.10x",
        "40.0",
        "5",
        "0",
    ]
    assert memory_table([dataclasses.replace(records[0], fetch_memory={})]) is None


def test_a_run_records_its_merge_stores_totals_per_executor():
    from pyspark_shuffle.bench.one_run import fetch_memory

    probe = {
        "1": {
            "netty_pooled_bytes": 1,
            "store_push_late": 7,
            "store_released_after_read": 9,
            "store_merged_to_disk": 0,
        },
        "2": {"netty_pooled_bytes": 1},
    }
    held = fetch_memory(probe, {}, {})
    assert held["1"]["store_push_late_bytes"] == 7
    assert held["1"]["store_released_after_read_bytes"] == 9
    assert held["1"]["store_merged_to_disk_bytes"] == 0
    # An executor whose store never merged (or sort's) has none.
    assert held["2"]["store_push_late_bytes"] is None
