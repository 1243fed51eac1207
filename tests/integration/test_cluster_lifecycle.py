"""The namespace cluster itself, for real (root or CAP_NET_ADMIN needed, else skipped): its
limits are in force, ``cut`` cuts, ``down`` leaves nothing, also after ``up`` was killed."""

import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from pyspark_shuffle.cluster import (
    ClusterSpec,
    PrivilegeError,
    down,
    kill_executors,
    lifecycle,
    linkcheck,
    parse_cluster,
    plan,
    require_privileges,
    running,
    set_link,
    state,
    status,
    system,
)

pytestmark = [pytest.mark.integration, pytest.mark.cluster]

#: Its own name and subnet: never the test session's cluster (pst) or one made by hand (pss).
SPEC = parse_cluster(
    "workers=2,memory=512m,link=20mbit,memory-cap=1500m,disk-rate=50m,name=psd,subnet=10.233.0.0/24"
)


@pytest.fixture(autouse=True)
def privileged():
    try:
        require_privileges()
    except PrivilegeError as error:
        pytest.skip(str(error))
    yield
    down(SPEC.name)  # after a failed test only: the others leave nothing to take down


def leftovers(spec: ClusterSpec):
    """Everything of ``spec``'s name still on the machine: namespaces, links, cgroups, dirs,
    processes started in its namespaces or holding its name, its state file."""
    found = [n for n in system.existing_netns() if n.startswith(spec.name + "-")]
    found += [d for d in os.listdir("/sys/class/net") if d.startswith(spec.name + "-")]
    for controller in ("memory", "blkio"):
        root = system.cgroup_v1_root(controller)
        if root:
            found += glob.glob(os.path.join(root + system.own_cgroup(controller), spec.name + "-*"))
    found += glob.glob(os.path.join("/tmp", f"{spec.name}-cluster-*"))
    marks = (f"{spec.name}-cluster-", f"--host {spec.bridge_address} ")
    found += [
        f"pid {p}"
        for p in os.listdir("/proc")
        if p.isdigit() and any(mark in system.cmdline(int(p)) for mark in marks)
    ]
    if os.path.exists(state.state_path(spec.name)):
        found.append(state.state_path(spec.name))
    return found


def connects(namespace: str, host: str, port: int) -> bool:
    probe = f"import socket; socket.create_connection(({host!r}, {port}), timeout=2).close()"
    return (
        subprocess.run(
            ["ip", "netns", "exec", namespace, sys.executable, "-c", probe], capture_output=True
        ).returncode
        == 0
    )


def test_limits_cut_heal_kill_and_down_leaves_nothing():
    assert not leftovers(SPEC), "clean up a cluster psd left from an earlier run: cluster down --name psd"
    with running(SPEC) as cluster:
        info = status(SPEC.name)
        assert [w["registered"] for w in info["workers"]] == ["ALIVE", "ALIVE"]
        assert [w["address"] for w in info["workers"]] == ["10.233.0.11", "10.233.0.12"]

        worker_pid = cluster.pids["worker-1"]
        memory = system.cgroup_dir("memory", plan.cgroup_name(SPEC, 1))
        assert str(worker_pid) in open(os.path.join(memory, "cgroup.procs")).read().split()
        assert int(open(os.path.join(memory, "memory.limit_in_bytes")).read()) == 1500 << 20
        blkio = system.cgroup_dir("blkio", plan.cgroup_name(SPEC, 1))
        assert f"{50 << 20}" in open(os.path.join(blkio, "blkio.throttle.read_bps_device")).read()

        # The token bucket holds the link to its rate (a functional check with a wide margin).
        received = linkcheck.measure(plan.netns(SPEC, 1), SPEC.worker_address(1), "", seconds=1.5)
        assert 0.5 * SPEC.link_bps < received < 1.1 * SPEC.link_bps, received

        master_port = int(cluster.master_url.rsplit(":", 1)[1])
        assert connects(plan.netns(SPEC, 2), SPEC.bridge_address, master_port)
        set_link(SPEC.name, 2, connected=False)
        assert status(SPEC.name)["workers"][1]["link_up"] is False
        assert not connects(plan.netns(SPEC, 2), SPEC.bridge_address, master_port)
        set_link(SPEC.name, 2, connected=True)
        assert connects(plan.netns(SPEC, 2), SPEC.bridge_address, master_port)
        assert kill_executors(SPEC.name, 1) == []  # no application, no executor
        assert leftovers(SPEC)
        # Every daemon carries the cluster's name, and so does what it starts: a process whose
        # pid ``up`` never recorded (killed between starting it and recording it) is found too.
        tagged = set(system.pids_with_env(lifecycle.CLUSTER_ENV, SPEC.name))
        assert set(cluster.pids.values()) <= tagged, (cluster.pids, tagged)
        unrecorded = subprocess.Popen(
            ["sleep", "600"], env=dict(os.environ, **{lifecycle.CLUSTER_ENV: SPEC.name})
        )
    assert leftovers(SPEC) == []
    assert not any(system.alive(pid) for pid in cluster.pids.values())
    assert unrecorded.wait(timeout=10) == -signal.SIGTERM


def _up_process():
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pyspark_shuffle",
            "cluster",
            "up",
            "--name",
            SPEC.name,
            "--subnet",
            SPEC.subnet,
            "--workers",
            "2",
            "--memory",
            "512m",
            "--memory-cap",
            "1500m",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _wait_until_recorded(process, kind: str):
    """Until the state file records a ``kind`` resource: ``up`` is midway."""
    deadline = time.monotonic() + 60
    while True:
        recorded = state.load(SPEC.name)
        if recorded and any(r.kind == kind for r in recorded.resources):
            return
        assert process.poll() is None, process.stdout.read().decode()
        assert time.monotonic() < deadline, f"no {kind} recorded within 60 s"
        time.sleep(0.01)  # polling the state file for up's progress


@pytest.mark.parametrize("kind", ["netns", "process"])
def test_down_after_up_was_killed(kind):
    process = _up_process()
    _wait_until_recorded(process, kind)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert leftovers(SPEC)
    assert down(SPEC.name)
    assert leftovers(SPEC) == []


def test_up_interrupted_takes_down_what_it_made():
    process = _up_process()
    _wait_until_recorded(process, "netns")
    os.kill(process.pid, signal.SIGTERM)
    assert process.wait(timeout=60) == 130, process.stdout.read().decode()
    assert leftovers(SPEC) == []


def test_a_recorded_cluster_is_never_made_twice():
    with running(SPEC):
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "pyspark_shuffle",
                "cluster",
                "up",
                "--name",
                SPEC.name,
                "--subnet",
                "10.234.0.0/24",
            ],
            capture_output=True,
            text=True,
        )
        assert second.returncode == 1 and "take it down first" in second.stderr
    assert leftovers(SPEC) == []


CLUSTER_DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "cluster.md")


def readme_cluster_commands():
    """The ``python -m pyspark_shuffle cluster`` lines of docs/cluster.md's block, as argv."""
    with open(CLUSTER_DOC, encoding="utf-8") as handle:
        lines = [line.split("#", 1)[0].split() for line in handle]
    return [words[4:] for words in lines if words[:4] == ["python", "-m", "pyspark_shuffle", "cluster"]]


def test_the_readme_cluster_commands_as_a_user_runs_them():
    # Under their own name and subnet, so they never meet a cluster brought up by hand.
    readme = readme_cluster_commands()
    assert [c[0] for c in readme] == ["up", "status", "check", "cut", "kill", "down"], readme
    named = parse_cluster("workers=4,name=psr,subnet=10.236.0.0/24")
    assert not leftovers(named)
    outputs = {}
    try:
        for command in readme:
            argv = command + ["--name", named.name]
            if command[0] == "up":
                argv += ["--subnet", named.subnet]
            done = subprocess.run(
                [sys.executable, "-m", "pyspark_shuffle", "cluster", *argv],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-2000:])
            outputs[command[0]] = done.stdout
            if command[0] == "cut":
                assert status(named.name)["workers"][1]["link_up"] is False
    finally:
        down(named.name)
    assert outputs["up"].startswith("spark://10.236.0.1:")
    assert "4 workers x 1 core(s) x 2048 MiB" in outputs["up"] and "w3 62500kbit" in outputs["up"]
    assert outputs["status"].count("ALIVE") == 4, outputs["status"]
    assert outputs["check"].count("\n") >= 4, outputs["check"]
    assert outputs["cut"].strip() == "worker 2: link cut"
    assert "none (no executor running)" in outputs["kill"]
    assert leftovers(named) == []
