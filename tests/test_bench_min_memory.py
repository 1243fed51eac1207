"""``bench --min-memory``: the bisection each manager's smallest executor memory is found by."""

from bench_runs import bench_run

from pyspark_shuffle.bench.command_line import parse_args
from pyspark_shuffle.bench.min_memory import (
    DIRECT_CAP_KEY,
    STEP_MB,
    floor_mb,
    lost_to_memory,
    min_memory_table,
    search_all,
    summary,
)


def fake_runner(needs_mb, calls):
    """Each manager completes at ``needs_mb[label]`` MiB or more, and loses a task below it."""

    def run(config, spec):
        memory = config.executor_memory_mb
        calls.append((spec.manager.label, memory))
        if memory >= needs_mb[spec.manager.label]:
            return bench_run(
                status="ok", manager=spec.manager.label, wall_s=10.0 + 1000 / memory, process_s=20.0
            )
        return bench_run(status="ok", manager=spec.manager.label, wall_s=30.0, reduce_tasks_rerun=1)

    return run


def test_each_manager_is_bisected_to_within_a_step_of_what_it_needs_taking_turns():
    config = parse_args(
        ["--managers", "sort,adaptive", "--skew", "0", "--executor-memory", "2g", "--min-memory"]
    )
    calls = []
    searches = search_all(config, fake_runner({"sort": 1000, "adaptive": 700}, calls), log=lambda _: None)
    found = {s.manager.label: s for s in searches}
    for label, needs in (("sort", 1000), ("adaptive", 700)):
        assert needs <= found[label].passing_mb <= needs + STEP_MB
        assert found[label].failing_mb < needs
        assert found[label].doubled.wall_s == 10.0 + 1000 / (2 * found[label].passing_mb)
    # Both start at --executor-memory, and then take turns while both search.
    assert calls[:4] == [("sort", 2048), ("adaptive", 2048), ("sort", calls[2][1]), ("adaptive", calls[3][1])]
    figures = summary(searches)
    assert figures["dummy 0 adaptive"]["vs_sort"] == round(
        found["adaptive"].passing_mb / found["sort"].passing_mb, 3
    )
    assert figures["dummy 0 sort"]["probes"][0] == (2048, "passed")
    table = min_memory_table(searches).splitlines()
    assert table[0].split()[:5] == ["workload", "skew", "manager", "smallest", "MiB"]
    # A search that found no failure above Spark's floor says so rather than "fails at 450".
    everything_passes = search_all(config, fake_runner({"sort": 0, "adaptive": 0}, []), log=lambda _: None)
    assert all("none > 450" in row for row in min_memory_table(everything_passes).splitlines()[2:])


def test_a_manager_that_fails_at_the_largest_memory_is_reported_so_not_searched_below():
    config = parse_args(["--managers", "sort", "--skew", "0", "--executor-memory", "1g", "--min-memory"])
    calls = []
    (search,) = search_all(config, fake_runner({"sort": 4096}, calls), log=lambda _: None)
    assert calls == [("sort", 1024)]
    assert search.passing_mb is None and search.doubled is None
    assert "> --executor-memory" in min_memory_table([search])


def test_a_probe_fails_on_any_task_lost_or_anything_wrong_in_spark_logs():
    assert lost_to_memory(bench_run(status="ok", wall_s=1.0)) is None
    assert (
        lost_to_memory(bench_run(status="failed", error="java.lang.OutOfMemoryError\nat"))
        == "java.lang.OutOfMemoryError"
    )
    assert lost_to_memory(bench_run(status="ok", stages=[{"failed": 2}])).startswith(
        "2 task attempt(s) failed"
    )
    assert lost_to_memory(bench_run(status="ok", map_tasks_rerun=3)).endswith("3 task(s) run again")
    finding = "ERROR Executor: Exception in task 1.0\njava.lang.OutOfMemoryError: Java heap space"
    assert lost_to_memory(bench_run(status="ok", log_findings=[finding])) == (
        "Spark logged: ERROR Executor: Exception in task 1.0"
    )


def test_min_memory_direct_bisects_the_direct_memory_cap_at_the_executor_memory_given():
    config = parse_args(
        [
            "--managers",
            "sort,adaptive",
            "--skew",
            "0",
            "--executor-memory",
            "1g",
            "--conf",
            "spark.executor.extraJavaOptions=-Dkept=1",
            "--conf",
            "spark.network.maxRemoteBlockSizeFetchToMem=16m",
            "--min-memory",
            "direct",
        ]
    )
    needs = {"sort": 300, "adaptive": 60}
    calls = []

    def run(probe, spec):
        assert probe.executor_memory_mb == 1024
        options = probe.conf[DIRECT_CAP_KEY].split()
        assert options[0] == "-Dkept=1"
        cap = int(options[-1].removeprefix("-XX:MaxDirectMemorySize=").removesuffix("m"))
        calls.append((spec.manager.label, cap))
        if cap >= needs[spec.manager.label]:
            return bench_run(status="ok", manager=spec.manager.label, wall_s=10.0, process_s=20.0)
        return bench_run(status="ok", manager=spec.manager.label, wall_s=30.0, reduce_tasks_rerun=1)

    searches = search_all(config, run, log=lambda _: None)
    assert calls[:2] == [("sort", 1024), ("adaptive", 1024)]
    found = {s.manager.label: s for s in searches}
    for label, need in needs.items():
        assert need <= found[label].passing_mb <= need + STEP_MB
    # Spark starts no executor whose direct memory is below maxRemoteBlockSizeFetchToMem.
    assert summary(searches)["dummy 0 adaptive"]["floor_mb"] == 16
    assert "none > 16" not in min_memory_table(searches)
    assert floor_mb(parse_args(["--min-memory", "direct"])) == 200
    assert floor_mb(parse_args(["--min-memory"])) == 450
