"""Command-line parsing of the benchmark harness (no JVM)."""

import pytest

from pyspark_shuffle.bench.command_line import parse_args, parse_managers
from pyspark_shuffle.bench.config import ManagerSpec


def error_of(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        parse_args(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_defaults():
    config = parse_args([])
    assert [m.label for m in config.managers] == ["sort", "adaptive"]
    assert config.skews == [0.0, 1.0, 2.0, 3.0]
    assert config.size_bytes == 512 << 20 and config.partition_bytes == 8 << 20
    assert config.num_partitions == 64
    assert config.master == "local-cluster[2,1,1024]"
    assert config.workloads == ["dummy"] and config.repeat == 3


def test_sizes_skews_cluster_and_conf():
    config = parse_args(
        [
            "--size",
            "64m",
            "--partition-size",
            "512k",
            "--skew",
            "0,1.5",
            "--executors",
            "3",
            "--executor-cores",
            "2",
            "--executor-memory",
            "2g",
            "--repeat",
            "5",
            "--workload",
            "join,groupby",
            "--conf",
            "spark.reducer.maxSizeInFlight=8m",
            "--conf",
            "spark.sql.shuffle.partitions = 16",
        ]
    )
    assert config.size_bytes == 64 << 20 and config.partition_bytes == 512 << 10
    assert config.skews == [0.0, 1.5]
    assert config.master == "local-cluster[3,2,2048]"
    assert config.repeat == 5 and config.workloads == ["join", "groupby"]
    assert config.conf == {"spark.reducer.maxSizeInFlight": "8m", "spark.sql.shuffle.partitions": "16"}


def test_managers_with_option_sets():
    specs = parse_managers("sort,adaptive,adaptive:in_flight_increment=4m")
    assert specs == [
        ManagerSpec("sort"),
        ManagerSpec("adaptive"),
        ManagerSpec("adaptive", (("in_flight_increment", "4m"),)),
    ]
    assert specs[2].label == "adaptive:in_flight_increment=4m"
    assert specs[2].options_dict() == {"in_flight_increment": "4m"}
    # ';' separates options too, and a bare key=value item continues the set before it.
    assert parse_managers("adaptive:in_flight_increment=1m;") == [
        ManagerSpec("adaptive", (("in_flight_increment", "1m"),))
    ]


@pytest.mark.parametrize(
    "argv, option, words",
    [
        (["--skew", "0,x"], "--skew", "not a number"),
        (["--skew", "-1"], "--skew", ">= 0"),
        (["--skew", "1,1"], "--skew", "twice"),
        (["--size", "12q"], "--size", "unknown size unit"),
        (["--size", "0"], "--size", "positive"),
        (["--partition-size", "1g", "--size", "64m"], "--partition-size", "exceeds --size"),
        (["--executor-memory", "100m"], "--executor-memory", "at least"),
        (["--executors", "0"], "--executors", "at least 1"),
        (["--repeat", "two"], "--repeat", "not an integer"),
        (["--conf", "novalue"], "--conf", "key=value"),
        (["--conf", "spark.shuffle.manager=sort"], "--conf", "--managers"),
        (["--workload", "sortby"], "--workload", "unknown workload"),
        (["--managers", "tungsten"], "--managers", "unknown shuffle manager 'tungsten'"),
        (["--managers", "sort:in_flight_increment=4m"], "--managers", "'sort' takes no options"),
        (["--managers", "adaptive:bogus=1"], "--managers", "unknown option 'bogus'"),
        (["--managers", "adaptive:in_flight_increment=-4m"], "--managers", "in_flight_increment"),
        (["--managers", "in_flight_increment=4m"], "--managers", "without a manager"),
        (["--managers", "sort,sort"], "--managers", "twice"),
    ],
)
def test_invalid_input_names_the_option(capsys, argv, option, words):
    err = error_of(capsys, argv)
    assert f"argument {option}:" in err
    assert words in err


def test_configure_checks_option_sets_against_conf(capsys):
    # configure() itself rejects an increment above spark.reducer.maxSizeInFlight from --conf.
    err = error_of(
        capsys,
        ["--managers", "sort,adaptive:in_flight_increment=4m", "--conf", "spark.reducer.maxSizeInFlight=2m"],
    )
    assert "argument --managers: adaptive:in_flight_increment=4m" in err
    assert "exceeds spark.reducer.maxSizeInFlight" in err


def test_cluster_option(capsys):
    config = parse_args(
        ["--cluster", "workers=4,link=250mbit,link-of=3:62500kbit,memory=2g", "--executor-memory", "1g"]
    )
    assert config.cluster.workers == 4 and config.cluster.link_rate(3) == 62_500_000
    assert config.executors == 4 and config.master_url is None
    assert config.to_json()["cluster"]["link_of"] == {"3": "62500kbit"}
    assert "link: 'fast'" in error_of(capsys, ["--cluster", "link=fast"])
    assert "exceeds the cluster's 1024m" in error_of(
        capsys, ["--cluster", "memory=1g", "--executor-memory", "2g"]
    )
    assert "not both" in error_of(capsys, ["--cluster", "workers=2", "--master", "spark://10.0.0.1:7077"])
    assert "spark://HOST:PORT" in error_of(capsys, ["--master", "local[2]"])


def test_master_option_of_an_unrecorded_master(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSPARK_SHUFFLE_CLUSTER_DIR", str(tmp_path))
    config = parse_args(["--master", "spark://10.231.0.1:7077"])
    assert config.master == "spark://10.231.0.1:7077" and config.cluster is None


def test_runs_on_a_cluster_sample_its_links():
    from pyspark_shuffle.bench.runner import job_for, plan

    config = parse_args(
        ["--cluster", "workers=3,link=100mbit,link-of=2:50mbit,memory=1g", "--skew", "0", "--repeat", "1"]
    )
    job = job_for(config, plan(config)[0])
    assert job["links"] == {
        "1": {"device": "pss-w1-h", "rate_bps": 10**8, "address": "10.231.0.11"},
        "2": {"device": "pss-w2-h", "rate_bps": 5 * 10**7, "address": "10.231.0.12"},
        "3": {"device": "pss-w3-h", "rate_bps": 10**8, "address": "10.231.0.13"},
    }
    assert job_for(parse_args(["--repeat", "1"]), plan(parse_args(["--repeat", "1"]))[0])["links"] == {}


def test_pin_maps_pins_the_dummy_workload(capsys):
    from pyspark_shuffle.bench.runner import job_for, plan

    assert parse_args([]).pin_hot is None
    config = parse_args(["--cluster", "workers=4,memory=1g", "--pin-maps", "3", "--repeat", "1"])
    assert config.pin_hot == 3
    job = job_for(config, plan(config)[0])
    assert job["pin_hot"] == 3 and job["executors"] == 4
    # Pinned tasks wait for their executor; --conf still overrides.
    assert job["conf"]["spark.locality.wait"] == "1h"
    assert parse_args(["--pin-maps"]).pin_hot == 1
    assert "--pin-maps: pins the dummy workload only" in error_of(capsys, ["--pin-maps", "--workload", "sql"])
    assert "executor 3 of 2: it must be between 1 and 2" in error_of(capsys, ["--pin-maps", "3"])


def test_kill_points_run_per_workload_skew_and_manager(capsys):
    from pyspark_shuffle.bench.runner import job_for, plan

    assert parse_args([]).kills == [None]
    config = parse_args(
        ["--cluster", "workers=4,memory=1g", "--pin-maps", "--kill", "none,mid-reduce", "--skew", "0,2"]
    )
    assert config.kills == [None, "mid-reduce"] and config.kill_worker == 2
    runs = plan(config)
    assert len(runs) == 2 * 2 * 2 * 3
    assert [(r.skew, r.kill) for r in runs[:4]] == [(0, None)] * 2 + [(0, "mid-reduce")] * 2
    assert job_for(config, runs[0])["kill"] is None
    job = job_for(config, runs[2])
    assert job["kill"] == {"point": "mid-reduce", "worker": 2, "cluster": "pss"}
    # The killed executor's replacement takes its pinned tasks soon.
    assert job["conf"]["spark.locality.wait.process"] == "1s"
    unharmed = parse_args(["--pin-maps"])
    assert "spark.locality.wait.process" not in job_for(unharmed, plan(unharmed)[0])["conf"]
    three = parse_args(["--cluster", "workers=3", "--kill", "after-map", "--kill-worker", "3"])
    assert three.kill_worker == 3


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--kill", "mid-reduce"], "kills an executor of a namespace cluster; give --cluster"),
        (["--cluster", "workers=2", "--kill", "mid-map"], "unknown kill point 'mid-map'; choose from none,"),
        (["--cluster", "workers=2", "--kill", "none,none"], "given twice"),
        (["--cluster", "workers=2", "--kill", "after-map", "--workload", "join"], "give --workload dummy"),
        (["--cluster", "workers=2", "--kill", "after-map", "--kill-worker", "3"], "worker 3 of 2"),
    ],
)
def test_kill_errors_name_the_option(capsys, argv, words):
    err = error_of(capsys, argv)
    assert "argument --kill" in err and words in err


def test_profile_is_off_unless_asked_and_defaults_to_bench_profiles():
    assert parse_args([]).profile_dir is None
    assert parse_args(["--profile"]).profile_dir == "bench-profiles"
    assert parse_args(["--profile", "/tmp/p"]).profile_dir == "/tmp/p"


def test_make_demo_shows_where_the_plugin_does_less_with_enough_repeats():
    """`make demo`'s benches parse, compare with sort over medians of 3, and cover local
    reduction with its CPU profile and the fetch budget with several reduce tasks an executor."""
    import shlex
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    dry_run = subprocess.run(
        ["make", "-n", "demo"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    commands = [
        line.split(" -m pyspark_shuffle bench ", 1)[1]
        for line in dry_run.splitlines()
        if " -m pyspark_shuffle bench " in line
    ]
    configs = {tuple(c.workloads): c for c in (parse_args(shlex.split(c)) for c in commands)}
    assert set(configs) == {("aggregate",), ("slowreduce",)}, dry_run
    for config in configs.values():
        assert [m.label for m in config.managers] == ["sort", "adaptive"] and config.repeat >= 3
    combine = configs[("aggregate",)]
    # Keys repeat: every key in about ten rows or more (16 bytes a row); judged warm, as users'
    # long-lived applications run, with the cold figures beside.
    assert combine.profile_dir and combine.keys * 10 <= combine.size_bytes // 16
    assert combine.warmup >= 1
    assert configs[("slowreduce",)].executor_cores >= 4


def test_warmup_runs_before_the_timed_one():
    assert parse_args([]).warmup == 0
    assert parse_args(["--warmup", "2"]).warmup == 2
    for bad in ("-1", "x"):
        with pytest.raises(SystemExit):
            parse_args(["--warmup", bad])
