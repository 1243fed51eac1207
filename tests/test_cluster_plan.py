"""The namespace cluster's specification, plan and state, without privileges or processes."""

import os

import pytest

from pyspark_shuffle._driver_host import driver_host
from pyspark_shuffle.cluster import (
    ClusterSpec,
    ClusterSpecError,
    format_rate,
    lifecycle,
    observe,
    parse_cluster,
    parse_rate,
    plan,
    state,
    system,
)
from pyspark_shuffle.cluster.cli import build_parser, main
from pyspark_shuffle.cluster.plan import Resource


def test_rates():
    assert parse_rate("250mbit") == 250_000_000
    assert parse_rate("1Gbit") == 10**9
    assert parse_rate("62.5mbit") == 62_500_000
    assert format_rate(250_000_000) == "250mbit" and format_rate(62_500_000) == "62500kbit"
    for bad in ("fast", "100", "100mb", "1kbit"):
        with pytest.raises(ValueError, match="rate|slow"):
            parse_rate(bad)


def test_parse_cluster_option():
    spec = parse_cluster("workers=4,link=250mbit,link-of=3:62500kbit,memory=2g,memory-cap=3g,disk-rate=100m")
    assert spec.workers == 4 and spec.memory_mb == 2048 and spec.cores == 1
    assert [spec.link_rate(w) for w in (1, 2, 3, 4)] == [250_000_000, 250_000_000, 62_500_000, 250_000_000]
    assert spec.memory_cap_bytes == 3 << 30 and spec.disk_rate_bytes == 100 << 20
    assert spec.to_json()["link_of"] == {"3": "62500kbit"}
    assert ClusterSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    "text, message",
    [
        ("workers=0", "workers: 0 is not between"),
        ("workers=2,link-of=3:10mbit", "link-of: worker 3"),
        ("link-of=1:10mbit,link-of=1:20mbit", "given twice"),
        ("link=fast", "link: 'fast' is not a rate"),
        ("memory=100m", "below 450 MiB"),
        ("memory=2g,memory-cap=1g", "memory-cap: 1g is below the worker's memory"),
        ("name=Pss", "name: 'Pss'"),
        ("name=toolongname", "name:"),
        ("subnet=10.0.0.0/30", "no room"),
        ("subnet=nonsense", "subnet:"),
        ("colour=red", "unknown key 'colour'; choose from workers"),
        ("workers", "expected key=value"),
    ],
)
def test_bad_cluster_options_name_the_key(text, message):
    with pytest.raises(ClusterSpecError, match=message):
        parse_cluster(text)


def test_addresses_and_names():
    spec = ClusterSpec(workers=3, name="pss", subnet="10.231.0.0/24")
    assert spec.bridge_address == "10.231.0.1"
    assert [spec.worker_address(w) for w in (1, 2, 3)] == ["10.231.0.11", "10.231.0.12", "10.231.0.13"]
    assert (plan.bridge(spec), plan.netns(spec, 2), plan.host_link(spec, 2), plan.ns_link(spec, 2)) == (
        "pss-br",
        "pss-w2",
        "pss-w2-h",
        "pss-w2-n",
    )
    longest = ClusterSpec(workers=99, name="abcdef", subnet="10.0.0.0/16")
    assert max(len(plan.host_link(longest, w)) for w in range(1, 100)) <= 15  # IFNAMSIZ - 1


def test_network_steps():
    spec = ClusterSpec(workers=2, link_bps=250_000_000, link_of=((2, 100_000_000),))
    steps = plan.network_steps(spec)
    commands = [str(s) for s in steps]
    assert commands[:3] == [
        "ip link add pss-br type bridge",
        "ip addr add 10.231.0.1/24 dev pss-br",
        "ip link set pss-br up",
    ]
    assert "ip netns add pss-w1" in commands
    assert "ip link add pss-w1-h type veth peer name pss-w1-n" in commands
    assert "ip -n pss-w2 addr add 10.231.0.12/24 dev pss-w2-n" in commands
    # both directions of each link are limited, each at its worker's rate
    assert "tc qdisc add dev pss-w1-h root tbf rate 250000000bit burst 125000 latency 50ms" in commands
    assert (
        "tc -n pss-w1 qdisc add dev pss-w1-n root tbf rate 250000000bit burst 125000 latency 50ms" in commands
    )
    assert "tc qdisc add dev pss-w2-h root tbf rate 100000000bit burst 65536 latency 50ms" in commands
    assert (
        "tc -n pss-w2 qdisc add dev pss-w2-n root tbf rate 100000000bit burst 65536 latency 50ms" in commands
    )
    # each resource is recorded by the step that creates it, before anything is put inside it
    created = [s.creates for s in steps if s.creates]
    assert created == [
        Resource("bridge", "pss-br"),
        Resource("netns", "pss-w1"),
        Resource("link", "pss-w1-h"),
        Resource("netns", "pss-w2"),
        Resource("link", "pss-w2-h"),
    ]


def test_cut_and_heal_take_the_host_end_down_and_up():
    spec = ClusterSpec(workers=2)
    assert [str(s) for s in plan.cut_steps(spec, 2, up=False)] == ["ip link set pss-w2-h down"]
    assert [str(s) for s in plan.cut_steps(spec, 2, up=True)] == ["ip link set pss-w2-h up"]


def test_worker_command_joins_its_cgroups_then_runs_spark_worker_in_its_namespace():
    spec = ClusterSpec(workers=2, cores=2, memory_mb=1024)
    env = plan.daemon_env("/spark", "10.231.0.1", "/venv/bin/python")
    argv = plan.worker_argv(
        spec,
        2,
        "/spark/bin/spark-class",
        "spark://10.231.0.1:7077",
        "/tmp/c/worker-2",
        env,
        ["/cg/memory/pss-w2/cgroup.procs"],
    )
    assert argv[:3] == ("sh", "-ec", 'echo $$ > /cg/memory/pss-w2/cgroup.procs; exec "$@"')
    command = argv[4:]
    assert command[:4] == ("ip", "netns", "exec", "pss-w2")
    assert "SPARK_LOCAL_IP=10.231.0.12" in command and "SPARK_LOCAL_DIRS=/tmp/c/worker-2/local" in command
    assert command[command.index(plan.WORKER_CLASS) :] == (
        plan.WORKER_CLASS,
        "--host",
        "10.231.0.12",
        "--cores",
        "2",
        "--memory",
        "1024m",
        "--work-dir",
        "/tmp/c/worker-2/work",
        "--webui-port",
        "8081",
        "spark://10.231.0.1:7077",
    )
    assert plan.worker_argv(spec, 1, "sc", "m", "/d", env)[0] == "ip"  # no cgroups: no shell


def test_teardown_order_processes_first_dirs_last_reverse_within_a_kind():
    created = [
        Resource("dir", "/tmp/pss-cluster-x"),
        Resource("bridge", "pss-br"),
        Resource("netns", "pss-w1"),
        Resource("link", "pss-w1-h"),
        Resource("netns", "pss-w2"),
        Resource("link", "pss-w2-h"),
        Resource("cgroup", "/cg/pss-w1"),
        Resource("process", "master:10"),
        Resource("process", "worker-1:11"),
    ]
    assert plan.teardown_order(created) == [
        Resource("process", "worker-1:11"),
        Resource("process", "master:10"),
        Resource("cgroup", "/cg/pss-w1"),
        Resource("netns", "pss-w2"),
        Resource("netns", "pss-w1"),
        Resource("link", "pss-w2-h"),
        Resource("link", "pss-w1-h"),
        Resource("bridge", "pss-br"),
        Resource("dir", "/tmp/pss-cluster-x"),
    ]
    with pytest.raises(ValueError, match="unknown resource kinds"):
        plan.teardown_order([Resource("volume", "x")])


def test_state_round_trip_and_lookup_by_master(tmp_path, monkeypatch):
    monkeypatch.setenv(state.STATE_DIR_ENV, str(tmp_path))
    cluster = state.ClusterState(ClusterSpec(workers=2, name="abc"))
    cluster.record(Resource("netns", "abc-w1"))
    cluster.master_url = "spark://10.231.0.1:7077"
    cluster.pids["master"] = 42
    cluster.save()
    loaded = state.load("abc")
    assert loaded == cluster
    assert state.find_by_master("spark://10.231.0.1:7077") == cluster
    assert state.find_by_master("spark://10.231.0.1:7078") is None
    state.remove("abc")
    assert state.load("abc") is None and state.all_states() == []


def test_its_logs_are_read_where_its_daemons_and_executors_write_them(tmp_path, monkeypatch):
    from pyspark_shuffle import spark_logs

    cluster = state.ClusterState(ClusterSpec(workers=2, name="abc"), directory=str(tmp_path))
    assert cluster.work_dirs == [str(tmp_path / "worker-1" / "work"), str(tmp_path / "worker-2" / "work")]
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "worker-1.log").write_text("26/11/26 17:00:00 INFO Worker: started\n")
    executor = tmp_path / "worker-2" / "work" / "app-7" / "3"
    executor.mkdir(parents=True)
    (executor / "stderr").write_text("26/11/26 17:00:01 ERROR Utils: Uncaught exception in thread x\n")
    (finding,) = observe.log_findings(cluster)
    assert finding.kind == spark_logs.UNCAUGHT and finding.source.startswith("executor 3 of app-7 (")
    monkeypatch.setenv(spark_logs.WORK_DIRS_ENV, "/elsewhere")
    with lifecycle.exported_work_dirs(cluster):
        assert spark_logs.work_dirs_of("spark://10.231.0.1:7077", None) == tuple(cluster.work_dirs)
    assert os.environ[spark_logs.WORK_DIRS_ENV] == "/elsewhere"


def test_without_privileges_one_clear_error_and_nothing_created(tmp_path, monkeypatch):
    with pytest.raises(system.PrivilegeError, match="needs root .* local-cluster"):
        system.require_privileges(capabilities=0, euid=1000)
    with pytest.raises(system.PrivilegeError, match="tc .*iproute2"):
        system.require_privileges(
            capabilities=0, euid=0, which=lambda tool: None if tool == "tc" else "/sbin/ip"
        )
    system.require_privileges(
        capabilities=(1 << 12) | (1 << 21), euid=1000, which=lambda tool: "/sbin/" + tool
    )

    monkeypatch.setenv(state.STATE_DIR_ENV, str(tmp_path))

    def refuse(*_, **__):
        raise system.PrivilegeError("no privileges here")

    def must_not_run(*argv, **_):
        raise AssertionError(f"ran {argv} without privileges")

    monkeypatch.setattr(system, "require_privileges", refuse)
    monkeypatch.setattr(system, "run", must_not_run)
    with pytest.raises(system.PrivilegeError):
        lifecycle.up(ClusterSpec(workers=2, name="abc"))
    assert list(tmp_path.iterdir()) == []


def test_preflight_refuses_names_and_subnets_in_use(tmp_path, monkeypatch):
    monkeypatch.setenv(state.STATE_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(system, "require_privileges", lambda: None)
    monkeypatch.setattr(system, "existing_netns", lambda: ["abc-w2"])
    monkeypatch.setattr(system, "link_exists", lambda name: False)
    monkeypatch.setattr(system, "used_networks", lambda: [])
    with pytest.raises(system.ClusterError, match="already in use: abc-w2"):
        lifecycle.preflight(ClusterSpec(workers=2, name="abc"))
    import ipaddress

    monkeypatch.setattr(system, "existing_netns", lambda: [])
    monkeypatch.setattr(system, "used_networks", lambda: [ipaddress.IPv4Network("10.231.0.0/16")])
    with pytest.raises(system.ClusterError, match="overlaps networks in use"):
        lifecycle.preflight(ClusterSpec(workers=2, name="abc"))
    state.ClusterState(ClusterSpec(workers=2, name="abc")).save()
    with pytest.raises(system.ClusterError, match="take it down first"):
        lifecycle.preflight(ClusterSpec(workers=2, name="abc"))


def test_up_takes_down_only_a_cluster_nothing_runs_any_more(tmp_path, monkeypatch):
    import subprocess

    states = tmp_path / "states"
    monkeypatch.setenv(state.STATE_DIR_ENV, str(states))
    monkeypatch.setattr(system, "require_privileges", lambda: None)
    tagged = []
    monkeypatch.setattr(system, "pids_with_env", lambda name, value: list(tagged))

    class Preflight(Exception):
        pass

    def preflight(_spec):
        raise Preflight

    monkeypatch.setattr(lifecycle, "preflight", preflight)
    ended = subprocess.Popen(["true"])
    ended.wait()
    leftover = tmp_path / "abc-cluster-1"
    leftover.mkdir()

    def record(creator):
        cluster = state.ClusterState(ClusterSpec(workers=2, name="abc"), creator=creator)
        cluster.record(Resource("dir", str(leftover)))

    # its creator still runs: it may be on its way up, so it stays
    record(os.getpid())
    with pytest.raises(Preflight):
        lifecycle.up(ClusterSpec(workers=2, name="abc"))
    assert state.load("abc") is not None and leftover.is_dir()
    # a process it started still runs
    record(ended.pid)
    tagged.append(os.getpid())
    with pytest.raises(Preflight):
        lifecycle.up(ClusterSpec(workers=2, name="abc"))
    assert state.load("abc") is not None and leftover.is_dir()
    # nothing of it runs: a killed run left it behind, and up takes it down before its checks
    tagged.clear()
    said = []
    with pytest.raises(Preflight):
        lifecycle.up(ClusterSpec(workers=2, name="abc"), log=said.append)
    assert state.load("abc") is None and not leftover.exists()
    assert any("left behind" in line for line in said)


def test_cli_parses_up_and_refuses_bad_values(capsys):
    ns = build_parser().parse_args(
        [
            "up",
            "--workers",
            "3",
            "--link",
            "100mbit",
            "--link-of",
            "2=10mbit",
            "--memory",
            "1g",
            "--memory-cap",
            "2g",
        ]
    )
    assert (ns.workers, ns.link, ns.link_of, ns.memory, ns.memory_cap) == (
        3,
        10**8,
        [(2, 10**7)],
        1024,
        2 << 30,
    )
    with pytest.raises(SystemExit):
        build_parser().parse_args(["up", "--link", "fast"])
    assert "argument --link: link: 'fast' is not a rate" in capsys.readouterr().err
    assert main(["up", "--workers", "0"]) == 2
    assert "workers: 0 is not between 1 and 99" in capsys.readouterr().err


def test_status_of_a_cluster_that_is_not_up(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(state.STATE_DIR_ENV, str(tmp_path))
    assert main(["status", "--name", "nope"]) == 1
    assert "no cluster 'nope' is up" in capsys.readouterr().err


def test_driver_host():
    assert driver_host("local-cluster[2,1,1024]") == "127.0.0.1"
    assert driver_host("local[*]") == "127.0.0.1"
    assert driver_host("spark://127.0.0.1:7077") == "127.0.0.1"
    with pytest.raises(ValueError, match="has no host"):
        driver_host("spark://:7077")


def test_teardown_scans_again_for_what_a_scan_caught_mid_exec(monkeypatch):
    # Pid 7 is mid-exec at the first scan (its environment reads empty), visible at the next.
    scans = iter([[5, 6], [5, 6, 7], [5, 6, 7]])
    killed = []
    monkeypatch.setattr(system, "pids_with_env", lambda name, value: next(scans))
    monkeypatch.setattr(system, "kill", lambda pids: killed.append(sorted(pids)))
    lifecycle._kill_tagged("psd")
    assert killed == [[5, 6], [7]]
