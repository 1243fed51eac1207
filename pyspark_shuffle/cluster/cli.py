"""``python -m pyspark_shuffle cluster up|down|status|cut|heal|kill|check``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Optional, Sequence

from . import faults, lifecycle, linkcheck, observe, state
from .spec import ClusterSpec, ClusterSpecError, format_rate, memory_mb, parse_link_of, rate_bits, size_bytes
from .system import ClusterError


def _typed(parse, *args):
    def convert(text: str):
        try:
            return parse(text, *args)
        except ClusterSpecError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return convert


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pyspark_shuffle cluster",
        description=(
            "A Spark standalone cluster on this machine: a Master in the host namespace and one "
            "Worker per Linux network namespace, each with its own address and a rate-limited link "
            "(needs root or CAP_NET_ADMIN)."
        ),
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def named(name: str, help_text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument(
            "--name", default="pss", help="cluster name, the prefix of everything it creates (default pss)"
        )
        return sub

    up = named("up", "start a cluster and print its master URL")
    up.add_argument("--workers", type=int, default=4, help="workers, each in its own namespace (default 4)")
    up.add_argument("--cores", type=int, default=1, help="cores each worker offers (default 1)")
    up.add_argument(
        "--memory",
        type=_typed(memory_mb),
        default=2048,
        metavar="SIZE",
        help="memory each worker offers its executors, e.g. 2g (default)",
    )
    up.add_argument(
        "--link",
        type=_typed(rate_bits),
        default=rate_bits("1gbit"),
        metavar="RATE",
        help="every worker's link rate in each direction, e.g. 250mbit (default 1gbit)",
    )
    up.add_argument(
        "--link-of",
        type=_typed(parse_link_of),
        action="append",
        default=[],
        metavar="N=RATE",
        help="another rate for worker N's link, e.g. 3=100mbit (repeatable)",
    )
    up.add_argument(
        "--memory-cap",
        type=_typed(size_bytes, "memory-cap"),
        metavar="SIZE",
        help="memory cgroup per worker (daemon and executors, page cache included), e.g. 3g",
    )
    up.add_argument(
        "--disk-rate",
        type=_typed(size_bytes, "disk-rate"),
        metavar="BYTES_PER_S",
        help="blkio throttle per worker on the disk of its local dirs, e.g. 100m (per second)",
    )
    up.add_argument(
        "--subnet", default="10.231.0.0/24", help="the bridge's IPv4 subnet (default 10.231.0.0/24)"
    )
    up.add_argument("--dir", help="where the cluster's work and local dirs go (default: the temp dir)")

    named(
        "down", "stop every process and remove every namespace, link, qdisc, cgroup and dir the cluster made"
    )
    status = named("status", "workers, addresses, link rates, live executors")
    status.add_argument("--json", action="store_true", help="print the status as JSON")
    for verb, text in (
        ("cut", "take worker N's link down"),
        ("heal", "bring worker N's link back up"),
        ("kill", "SIGKILL worker N's executor JVMs"),
    ):
        named(verb, text).add_argument("worker", type=int, metavar="N")
    check = named("check", "measure each worker's link throughput in both directions against its rate")
    check.add_argument(
        "--seconds", type=float, default=2.0, help="seconds per direction and worker (default 2)"
    )
    return parser


def spec_from_args(ns: argparse.Namespace) -> ClusterSpec:
    return ClusterSpec(
        workers=ns.workers,
        cores=ns.cores,
        memory_mb=ns.memory,
        link_bps=ns.link,
        link_of=tuple(ns.link_of),
        memory_cap_bytes=ns.memory_cap,
        disk_rate_bytes=ns.disk_rate,
        name=ns.name,
        subnet=ns.subnet,
    )


def summary(cluster) -> str:
    spec = cluster.spec
    links = ", ".join(f"w{w} {format_rate(spec.link_rate(w))}" for w in range(1, spec.workers + 1))
    extras = []
    if spec.memory_cap_bytes:
        extras.append(f"memory cap {spec.memory_cap_bytes >> 20} MiB")
    if spec.disk_rate_bytes:
        extras.append(f"disk {spec.disk_rate_bytes >> 20} MiB/s")
    return (
        f"cluster {spec.name}: {spec.workers} workers x {spec.cores} core(s) x {spec.memory_mb} MiB "
        f"at {spec.worker_address(1)}..{spec.worker_address(spec.workers)}, links {links}"
        + (f", {', '.join(extras)}" if extras else "")
        + f"; master {cluster.master_url}"
    )


def format_status(info: dict) -> str:
    lines = [
        f"cluster {info['name']}: master {info['master_url']} "
        f"({'alive' if info['master_alive'] else 'NOT RUNNING'}, UI {info['master_webui']}), "
        f"apps: {', '.join(info['active_apps']) or 'none'}"
    ]
    lines.append(
        f"{'worker':>6}  {'namespace':<10} {'address':<15} {'link':>9}  {'state':<6} "
        f"{'registered':<10} executors"
    )
    for w in info["workers"]:
        lines.append(
            f"{w['worker']:>6}  {w['namespace']:<10} {w['address']:<15} {w['link']:>9}  "
            f"{'up' if w['link_up'] else 'CUT':<6} {w['registered']:<10} {w['executors']}"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    ns = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    log = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    try:
        if ns.command == "up":
            try:
                spec = spec_from_args(ns)
            except ClusterSpecError as error:
                print(f"error: {error}", file=sys.stderr)
                return 2
            cluster = lifecycle.up(spec, base_dir=ns.dir, log=log)
            print(cluster.master_url)
            print(summary(cluster))
        elif ns.command == "down":
            if not lifecycle.down(ns.name, log=log):
                print(f"no cluster {ns.name!r} is recorded; nothing to do", file=sys.stderr)
        elif ns.command == "status":
            info = observe.status(ns.name)
            print(json.dumps(info, indent=1) if ns.json else format_status(info))
        elif ns.command in ("cut", "heal"):
            faults.set_link(ns.name, ns.worker, connected=ns.command == "heal")
            print(f"worker {ns.worker}: link {'up' if ns.command == 'heal' else 'cut'}")
        elif ns.command == "kill":
            pids = faults.kill_executors(ns.name, ns.worker)
            print(f"worker {ns.worker}: killed executor JVMs {pids or 'none (no executor running)'}")
        elif ns.command == "check":
            results = linkcheck.check(state.require(ns.name), ns.seconds)
            print(linkcheck.format_results(results))
    except ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
