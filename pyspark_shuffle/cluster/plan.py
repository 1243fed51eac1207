"""The commands that bring a cluster up and the order things are taken down, as data.

Pure functions of a :class:`~.spec.ClusterSpec` (and paths): nothing here runs or needs
privileges, so the plan is unit-tested as it is. :mod:`.lifecycle` carries it out.

Layout: a bridge ``<name>-br`` in the host namespace holds the subnet's first address (the
driver's and the master's); worker i lives in namespace ``<name>-w<i>`` behind a veth pair,
``<name>-w<i>-h`` on the bridge and ``<name>-w<i>-n`` inside, with the address
``subnet + 10 + i``. Each end's egress gets a token bucket (tbf) at the worker's link rate, so
the host end limits what the worker receives and the namespace end what it sends: traffic
between two workers crosses the sender's uplink and the receiver's downlink, as through a switch.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .spec import ClusterSpec

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS_MARK = "CoarseGrainedExecutorBackend"
WORKER_WEBUI_PORT = 8081  # each namespace has its own ports
DAEMON_MEMORY = "256m"  # the Master's and Workers' own heaps; executors get the worker's memory
#: tbf queue: how long a packet may wait for tokens before it is dropped (a switch port's buffer).
TBF_LATENCY = "50ms"


def bridge(spec: ClusterSpec) -> str:
    return f"{spec.name}-br"


def netns(spec: ClusterSpec, worker: int) -> str:
    return f"{spec.name}-w{worker}"


def host_link(spec: ClusterSpec, worker: int) -> str:
    return f"{spec.name}-w{worker}-h"


def ns_link(spec: ClusterSpec, worker: int) -> str:
    return f"{spec.name}-w{worker}-n"


def cgroup_name(spec: ClusterSpec, worker: int) -> str:
    return f"{spec.name}-w{worker}"


def tbf_burst_bytes(rate_bps: int) -> int:
    """Bucket size: 4 ms at the rate, at least 64 KiB so a GSO segment of the veth fits."""
    return max(rate_bps // 8 // 250, 64 << 10)


@dataclass(frozen=True)
class Resource:
    """Something ``up`` creates and ``down`` removes: kind and the name that identifies it."""

    kind: str  # bridge | netns | link | cgroup | dir | process
    name: str


@dataclass(frozen=True)
class Step:
    """One command of ``up``; ``creates`` is recorded in the state file before it runs."""

    argv: Tuple[str, ...]
    creates: Optional[Resource] = None

    def __str__(self) -> str:
        return shlex.join(self.argv)


def tbf(device: str, rate_bps: int, namespace: Optional[str] = None, verb: str = "add") -> Tuple[str, ...]:
    prefix = ("tc", "-n", namespace) if namespace else ("tc",)
    return prefix + (
        "qdisc",
        verb,
        "dev",
        device,
        "root",
        "tbf",
        "rate",
        f"{rate_bps}bit",
        "burst",
        str(tbf_burst_bytes(rate_bps)),
        "latency",
        TBF_LATENCY,
    )


def network_steps(spec: ClusterSpec) -> List[Step]:
    """Bridge, then per worker: namespace, veth pair, addresses, rate limits."""
    prefix = spec.network.prefixlen
    br = bridge(spec)
    steps = [
        Step(("ip", "link", "add", br, "type", "bridge"), Resource("bridge", br)),
        Step(("ip", "addr", "add", f"{spec.bridge_address}/{prefix}", "dev", br)),
        Step(("ip", "link", "set", br, "up")),
    ]
    for worker in range(1, spec.workers + 1):
        ns, host, inner = netns(spec, worker), host_link(spec, worker), ns_link(spec, worker)
        rate = spec.link_rate(worker)
        steps += [
            Step(("ip", "netns", "add", ns), Resource("netns", ns)),
            Step(("ip", "link", "add", host, "type", "veth", "peer", "name", inner), Resource("link", host)),
            Step(("ip", "link", "set", inner, "netns", ns)),
            Step(("ip", "link", "set", host, "master", br)),
            Step(("ip", "link", "set", host, "up")),
            Step(("ip", "-n", ns, "addr", "add", f"{spec.worker_address(worker)}/{prefix}", "dev", inner)),
            Step(("ip", "-n", ns, "link", "set", inner, "up")),
            Step(("ip", "-n", ns, "link", "set", "lo", "up")),
            Step(tbf(host, rate)),  # what the worker receives
            Step(tbf(inner, rate, namespace=ns)),  # what the worker sends
        ]
    return steps


def cut_steps(spec: ClusterSpec, worker: int, up: bool) -> List[Step]:
    """Take worker's link down (the host end; the namespace end loses its carrier) or up."""
    return [Step(("ip", "link", "set", host_link(spec, worker), "up" if up else "down"))]


def master_argv(spark_class: str, host: str, port: int, webui_port: int) -> Tuple[str, ...]:
    return (spark_class, MASTER_CLASS, "--host", host, "--port", str(port), "--webui-port", str(webui_port))


def daemon_env(spark_home: str, local_ip: str, python: str) -> Dict[str, str]:
    return {
        "SPARK_HOME": spark_home,
        "SPARK_LOCAL_IP": local_ip,
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        # Python workers of executors run this interpreter (the one with pyspark_shuffle).
        "PYSPARK_PYTHON": python,
    }


def worker_argv(
    spec: ClusterSpec,
    worker: int,
    spark_class: str,
    master_url: str,
    worker_dir: str,
    env: Dict[str, str],
    cgroup_procs: Sequence[str] = (),
) -> Tuple[str, ...]:
    """A Worker inside its namespace with its own work and local dirs (its executors inherit
    SPARK_LOCAL_DIRS); first the shell joins the worker's cgroups, so every process the Worker
    starts is in them too."""
    address = spec.worker_address(worker)
    env = dict(env, SPARK_LOCAL_IP=address, SPARK_LOCAL_DIRS=f"{worker_dir}/local")
    command = (
        "ip",
        "netns",
        "exec",
        netns(spec, worker),
        "env",
        *(f"{k}={v}" for k, v in sorted(env.items())),
        spark_class,
        WORKER_CLASS,
        "--host",
        address,
        "--cores",
        str(spec.cores),
        "--memory",
        f"{spec.memory_mb}m",
        "--work-dir",
        f"{worker_dir}/work",
        "--webui-port",
        str(WORKER_WEBUI_PORT),
        master_url,
    )
    if not cgroup_procs:
        return command
    join = "; ".join(f"echo $$ > {shlex.quote(path)}" for path in cgroup_procs)
    return ("sh", "-ec", join + '; exec "$@"', "sh") + command


def teardown_order(resources: Sequence[Resource]) -> List[Resource]:
    """What ``down`` removes, in order: processes first (they hold the namespaces, cgroups and
    files), then cgroups (empty once their processes are gone), namespaces (deleting one deletes
    the veth pair inside, its qdiscs with it), links left over from a half-done ``up``, the
    bridge, and last the directories. Within a kind, the reverse of creation."""
    rank = {"process": 0, "cgroup": 1, "netns": 2, "link": 3, "bridge": 4, "dir": 5}
    unknown = sorted({r.kind for r in resources} - set(rank))
    if unknown:
        raise ValueError(f"unknown resource kinds in the state file: {unknown}")
    indexed = list(enumerate(resources))
    indexed.sort(key=lambda item: (rank[item[1].kind], -item[0]))
    return [resource for _, resource in indexed]
