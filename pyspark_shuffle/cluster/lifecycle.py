"""Bringing a namespace cluster up and down (its faults are :mod:`.faults`, what it reports
:mod:`.observe`).

``up`` checks everything first (privileges, tools, cgroup controllers, free names and subnet), so
a refusal creates nothing; then it records each resource in the state file before creating it,
and if anything fails or is interrupted (Ctrl-C, SIGTERM) it takes down what it made. ``down``
removes only what a state file records, and only resources whose names carry the cluster's
prefix, so it never touches what it did not create. A process's pid is known only once it runs,
so each one also carries the cluster's name in its environment (``CLUSTER_ENV``), which its
children inherit: ``down`` finds them by it even if ``up`` was killed before recording a pid.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Set

from .. import spark_logs
from . import plan, state, system
from .observe import log_findings, master_info
from .plan import Resource, Step
from .spec import ClusterSpec, format_rate
from .state import ClusterState
from .system import ClusterError

READY_TIMEOUT_S = 120.0
#: Set to the cluster's name in the environment of every process ``up`` starts.
CLUSTER_ENV = "PYSPARK_SHUFFLE_CLUSTER"
Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def abandoned(cluster: ClusterState) -> bool:
    """Nothing of the cluster runs: neither the process that brought it up nor any it started.
    A run killed outright (SIGKILL, a CI job cut short) leaves such a cluster behind, and its
    namespaces, links and cgroups would block the next ``up`` of that name for good."""
    if cluster.creator is not None and system.alive(cluster.creator):
        return False
    return not system.pids_with_env(CLUSTER_ENV, cluster.name)


def _reclaim_abandoned(name: str, log: Log) -> None:
    existing = state.load(name)
    if existing is None or not abandoned(existing):
        return
    log(f"cluster {name}: left behind by a run that ended without taking it down; taking it down")
    errors = _teardown(existing, log)
    if errors:
        raise ClusterError(
            f"cluster {name} was left behind by an earlier run and could not be taken down:\n"
            + "\n".join(errors)
        )


def preflight(spec: ClusterSpec) -> None:
    """Everything ``up`` needs, checked before it creates anything."""
    system.require_privileges()
    existing = state.load(spec.name)
    if existing is not None:
        raise ClusterError(
            f"cluster {spec.name!r} is up (recorded in {existing.path}, master {existing.master_url}); "
            f"take it down first: python -m pyspark_shuffle cluster down --name {spec.name}"
        )
    namespaces = set(system.existing_netns())
    taken = [n for n in (plan.netns(spec, w) for w in range(1, spec.workers + 1)) if n in namespaces]
    links = [plan.bridge(spec)] + [plan.host_link(spec, w) for w in range(1, spec.workers + 1)]
    taken += [link for link in links if system.link_exists(link)]
    if taken:
        raise ClusterError(
            f"names of cluster {spec.name!r} are already in use: {', '.join(taken)}; choose another --name"
        )
    overlapping = [str(n) for n in system.used_networks() if n.overlaps(spec.network)]
    if overlapping:
        raise ClusterError(
            f"subnet {spec.subnet} overlaps networks in use here ({', '.join(sorted(set(overlapping)))}); "
            "choose another --subnet"
        )
    if spec.memory_cap_bytes is not None:
        system.cgroup_dir("memory", plan.cgroup_name(spec, 1))
    if spec.disk_rate_bytes is not None:
        system.cgroup_dir("blkio", plan.cgroup_name(spec, 1))


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGTERM (and SIGHUP) raise KeyboardInterrupt here, so ``up`` cleans up as on Ctrl-C."""

    def interrupt(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = {}
    try:
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous[sig] = signal.signal(sig, interrupt)
    except ValueError:  # not the main thread: signals stay as they are
        previous = {}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def up(spec: ClusterSpec, base_dir: Optional[str] = None, log: Log = _quiet) -> ClusterState:
    """Create the cluster of ``spec`` and wait until every worker registered with the master. A
    cluster of the same name that nothing runs any more is taken down first."""
    system.require_privileges()
    _reclaim_abandoned(spec.name, log)
    preflight(spec)
    home = system.spark_home()
    spark_class = system.spark_class(home)
    cluster = ClusterState(spec, creator=os.getpid())
    with _interruptible():
        try:
            _create(cluster, home, spark_class, base_dir, log)
        except BaseException as error:
            log(
                f"cluster {spec.name}: up failed ({type(error).__name__}: {error}); taking down what was made"
            )
            _teardown(cluster, log)
            raise
    return cluster


def _run_step(cluster: ClusterState, step: Step) -> None:
    if step.creates is not None:
        cluster.record(step.creates)
    system.run(step.argv)


def _create(cluster: ClusterState, home: str, spark_class: str, base_dir: Optional[str], log: Log) -> None:
    spec = cluster.spec
    cluster.save()
    directory = tempfile.mkdtemp(prefix=f"{spec.name}-cluster-", dir=base_dir)
    cluster.directory = directory
    cluster.record(Resource("dir", directory))
    os.makedirs(os.path.join(directory, "logs"))
    for step in plan.network_steps(spec):
        _run_step(cluster, step)
    log(
        f"cluster {spec.name}: bridge {plan.bridge(spec)} {spec.bridge_address}, {spec.workers} namespaces, "
        f"links {', '.join(format_rate(spec.link_rate(w)) for w in range(1, spec.workers + 1))}"
    )
    cgroups = {w: _make_cgroups(cluster, w, directory) for w in range(1, spec.workers + 1)}

    env = plan.daemon_env(home, spec.bridge_address, sys.executable)
    port, webui = system.free_ports(spec.bridge_address, 2)
    cluster.master_url = f"spark://{spec.bridge_address}:{port}"
    cluster.master_webui = f"http://{spec.bridge_address}:{webui}"
    _start(cluster, "master", plan.master_argv(spark_class, spec.bridge_address, port, webui), env)
    _wait_for(cluster, lambda info: info.get("status") == "ALIVE", "the master to start")
    for worker in range(1, spec.workers + 1):
        worker_dir = os.path.join(directory, f"worker-{worker}")
        os.makedirs(os.path.join(worker_dir, "local"))
        os.makedirs(os.path.join(worker_dir, "work"))
        argv = plan.worker_argv(
            spec, worker, spark_class, cluster.master_url, worker_dir, env, cgroups[worker]
        )
        _start(cluster, f"worker-{worker}", argv, {})
    _wait_for(
        cluster, lambda info: info.get("aliveworkers") == spec.workers, f"{spec.workers} workers to register"
    )
    cluster.ready = True
    cluster.save()


def _make_cgroups(cluster: ClusterState, worker: int, directory: str) -> List[str]:
    """The worker's cgroups (memory cap, disk throttle); their ``cgroup.procs`` files."""
    spec = cluster.spec
    procs = []
    limits = []
    if spec.memory_cap_bytes is not None:
        limits.append(("memory", {"memory.limit_in_bytes": str(spec.memory_cap_bytes)}))
    if spec.disk_rate_bytes is not None:
        disk = system.whole_disk(directory)
        limits.append(
            (
                "blkio",
                {
                    "blkio.throttle.read_bps_device": f"{disk} {spec.disk_rate_bytes}",
                    "blkio.throttle.write_bps_device": f"{disk} {spec.disk_rate_bytes}",
                },
            )
        )
    for controller, settings in limits:
        path = system.cgroup_dir(controller, plan.cgroup_name(spec, worker))
        cluster.record(Resource("cgroup", path))
        os.mkdir(path)
        for name, value in settings.items():
            system.write(os.path.join(path, name), value)
        procs.append(os.path.join(path, "cgroup.procs"))
    return procs


def _start(cluster: ClusterState, role: str, argv, env: Dict[str, str]) -> None:
    import subprocess

    log_path = os.path.join(cluster.directory, "logs", f"{role}.log")
    with open(log_path, "ab") as out:
        process = subprocess.Popen(
            list(argv),
            env=dict(os.environ, **env, **{CLUSTER_ENV: cluster.name}),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=cluster.directory,
        )
    cluster.pids[role] = process.pid
    cluster.record(Resource("process", f"{role}:{process.pid}"))


def _wait_for(cluster: ClusterState, condition: Callable[[Dict[str, Any]], bool], what: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while True:
        info = master_info(cluster, timeout=2.0)
        if info and condition(info):
            return
        dead = [role for role, pid in cluster.pids.items() if not system.alive(pid)]
        if dead or time.monotonic() > deadline:
            reason = f"{', '.join(dead)} exited" if dead else f"no answer within {READY_TIMEOUT_S:.0f} s"
            raise ClusterError(
                f"waiting for {what}: {reason}; logs: {cluster.directory}/logs\n{_log_tails(cluster)}"
            )
        time.sleep(0.2)  # polling the master's status page; ends on the condition or the deadline


def _log_tails(cluster: ClusterState, lines: int = 8) -> str:
    out = []
    for role in cluster.pids:
        path = os.path.join(cluster.directory or "", "logs", f"{role}.log")
        with contextlib.suppress(OSError), open(path, errors="replace") as handle:
            out.append(f"--- {role} ---\n" + "".join(handle.readlines()[-lines:]))
    return "\n".join(out)


def _owned(cluster: ClusterState, resource: Resource) -> bool:
    """Only names under the cluster's prefix, and processes still running what ``up`` started."""
    prefix = f"{cluster.name}-"
    if resource.kind in ("bridge", "netns", "link"):
        return resource.name.startswith(prefix)
    if resource.kind in ("cgroup", "dir"):
        return os.path.basename(resource.name).startswith(prefix)
    return True


def _remove(cluster: ClusterState, resource: Resource, log: Log) -> None:
    if not _owned(cluster, resource):
        log(f"cluster {cluster.name}: not removing {resource.kind} {resource.name}: not one of its names")
        return
    if resource.kind == "process":
        role, _, pid = resource.name.rpartition(":")
        # ``up`` started each daemon as the leader of a new process group, which its children
        # (spark-class's launcher JVM, a Worker's executors) share. Pids may have been reused
        # since: only members still running Spark are killed.
        system.kill(p for p in system.process_group(int(pid)) if "org.apache.spark" in system.cmdline(p))
        if role.startswith("worker-"):  # its executors and anything else started in its namespace
            system.kill(system.netns_pids(plan.netns(cluster.spec, int(role.split("-")[1]))))
    elif resource.kind == "cgroup":
        if os.path.isdir(resource.name):
            with contextlib.suppress(OSError):
                with open(os.path.join(resource.name, "cgroup.procs")) as handle:
                    system.kill(int(p) for p in handle.read().split())
            _rmdir_retrying(resource.name)
    elif resource.kind == "netns":
        if resource.name in system.existing_netns():
            system.kill(system.netns_pids(resource.name))
            system.run(["ip", "netns", "del", resource.name])
    elif resource.kind in ("link", "bridge"):
        # A deleted namespace takes its veth pair with it, asynchronously: the host end may
        # vanish between the check and the delete.
        done = system.run(["ip", "link", "del", resource.name], check=False)
        if done.returncode != 0 and system.link_exists(resource.name):
            raise ClusterError(f"`ip link del {resource.name}` failed: {done.stderr.strip()}")
    elif resource.kind == "dir":
        shutil.rmtree(resource.name, ignore_errors=True)


def _rmdir_retrying(path: str) -> None:
    """A cgroup is busy until the kernel has reaped its last task; retry briefly."""
    deadline = time.monotonic() + 10.0
    while True:
        try:
            os.rmdir(path)
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # waiting for the kernel to release the cgroup; bounded by the deadline


def _kill_tagged(name: str) -> None:
    """Kill every process carrying the cluster's name, scanning again after each kill: a
    process caught mid-exec (a worker launching an executor as we kill it) shows an empty
    environment for a moment, so one scan can miss it; measured, 18% of processes read right
    after ``Popen`` returns, 92% on a loaded machine."""
    killed: Set[int] = set()
    while True:
        found = set(system.pids_with_env(CLUSTER_ENV, name)) - killed
        if not found:
            return
        system.kill(found)
        killed |= found


def _teardown(cluster: ClusterState, log: Log) -> List[str]:
    """Remove every recorded resource (processes first); the errors, one line each."""
    errors = []
    _kill_tagged(cluster.name)
    for resource in plan.teardown_order(cluster.resources):
        try:
            _remove(cluster, resource, log)
        except Exception as error:  # keep going: remove everything else
            errors.append(f"{resource.kind} {resource.name}: {error}")
    if errors:
        cluster.save()
    else:
        state.remove(cluster.name)
    return errors


def down(name: str = "pss", log: Log = _quiet) -> bool:
    """Take down the cluster recorded as ``name``, saying first what its logs hold; False when
    none is recorded."""
    cluster = state.load(name)
    if cluster is None:
        return False
    system.require_privileges()
    log(f"cluster {name}: {spark_logs.report(log_findings(cluster))}")
    errors = _teardown(cluster, log)
    if errors:
        raise ClusterError(
            f"cluster {name}: some resources could not be removed (the state file "
            f"{cluster.path} keeps them for another `down`):\n" + "\n".join(errors)
        )
    log(f"cluster {name}: down")
    return True


@contextlib.contextmanager
def running(spec: ClusterSpec, log: Log = _quiet) -> Iterator[ClusterState]:
    """A cluster for the ``with`` block, taken down after it (also on errors and Ctrl-C). While
    it runs, the sessions this process and its children start find its executors' logs
    (:func:`exported_work_dirs`)."""
    cluster = up(spec, log=log)
    try:
        with _interruptible(), exported_work_dirs(cluster):
            yield cluster
    finally:
        down(spec.name, log=log)


@contextlib.contextmanager
def exported_work_dirs(cluster: ClusterState) -> Iterator[None]:
    """Names ``cluster``'s work dirs in ``PYSPARK_SHUFFLE_WORK_DIRS`` for the ``with`` block,
    where the sessions of this process and its children look for their executors' logs."""
    before = os.environ.get(spark_logs.WORK_DIRS_ENV)
    os.environ[spark_logs.WORK_DIRS_ENV] = os.pathsep.join(cluster.work_dirs)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(spark_logs.WORK_DIRS_ENV, None)
        else:
            os.environ[spark_logs.WORK_DIRS_ENV] = before
