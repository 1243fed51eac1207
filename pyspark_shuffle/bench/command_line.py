"""Command line of ``python -m pyspark_shuffle bench``: parsing and checking, no JVM.

It builds a :class:`~pyspark_shuffle.bench.config.BenchConfig`.

Every invalid value fails here, before any Spark application starts, with an argparse error
naming the option (``argument --skew: ...``); exit status 2.
"""

from __future__ import annotations

import argparse
import math
import re
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .._jars import JarError
from ..cluster.spec import ClusterSpec, ClusterSpecError, parse_cluster
from ..configure_options import validate_options
from ..dummy.spec import DummySpec
from ..values import MIN_EXECUTOR_MEMORY_BYTES, format_size, named, parse_size, size_between, zipf_exponent
from .config import (
    MANAGER_KINDS,
    OWNED_KEYS,
    ROW_OVERHEAD_BYTES,
    SORT,
    UNIFORM_KEY_WORKLOADS,
    WORKLOADS,
    BenchConfig,
    ManagerSpec,
    check_with_configure,
)
from .faults import KILL_POINTS, NO_KILL

# ---- value parsers: each raises argparse.ArgumentTypeError, shown as "argument --x: ..."


def _argument(check: Callable[[Any], Any]) -> Callable[[str], Any]:
    """An argparse type from a check of :mod:`pyspark_shuffle.values`."""

    def parse(text: str) -> Any:
        try:
            return check(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{text!r}: {error}") from None

    return parse


_size = _argument(lambda text: size_between(text, 1))


def _executor_memory(text: str) -> int:
    value = parse_size(text, default_unit="m")
    if value % (1 << 20):
        raise ValueError("must be a whole number of MiB")
    if value < MIN_EXECUTOR_MEMORY_BYTES:
        raise ValueError(f"Spark needs at least {format_size(MIN_EXECUTOR_MEMORY_BYTES)} per executor")
    return value >> 20


_memory_mb = _argument(_executor_memory)


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number, 0 or more")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive number")
    return value


def parse_skews(text: str) -> List[float]:
    """``"0,1,2.5"`` -> [0.0, 1.0, 2.5]: finite numbers >= 0 (the Zipf exponent), no repeats."""
    skews: List[float] = []
    for item in _items(text):
        try:
            number = float(item)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not a number") from None
        try:
            value = named("skew", number, zipf_exponent)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        if value in skews:
            raise argparse.ArgumentTypeError(f"skew {item!r} is given twice")
        skews.append(value)
    if not skews:
        raise argparse.ArgumentTypeError("expected comma-separated numbers, e.g. 0,1,2,3")
    return skews


def parse_workloads(text: str) -> List[str]:
    workloads: List[str] = []
    for item in _items(text):
        if item not in WORKLOADS:
            raise argparse.ArgumentTypeError(f"unknown workload {item!r}; choose from {', '.join(WORKLOADS)}")
        if item not in workloads:
            workloads.append(item)
    if not workloads:
        raise argparse.ArgumentTypeError(f"expected one or more of {', '.join(WORKLOADS)}")
    return workloads


def parse_managers(text: str) -> List[ManagerSpec]:
    """``"sort,adaptive,adaptive:in_flight_increment=4m"`` -> manager specs.

    After ``kind:`` come ``key=value`` options separated by ``;`` or ``,``; a comma-separated item
    that holds ``=`` and no ``:`` continues the option set before it, so
    ``adaptive:a=1,b=2,sort`` is one adaptive set with two options, then sort. Option names and
    values are checked like :func:`pyspark_shuffle.configure` checks them."""
    groups: List[List[str]] = []
    for item in _items(text):
        if "=" in item and ":" not in item:
            if not groups or ":" not in groups[-1][0]:
                raise argparse.ArgumentTypeError(
                    f"{item!r} is an option without a manager; write it as adaptive:{item}"
                )
            groups[-1].append(item)
        else:
            groups.append([item])
    specs: List[ManagerSpec] = []
    for group in groups:
        head, _, first = group[0].partition(":")
        kind = head.strip()
        if kind not in MANAGER_KINDS:
            raise argparse.ArgumentTypeError(
                f"unknown shuffle manager {kind!r}; choose from {', '.join(MANAGER_KINDS)}"
            )
        raw = [first] + group[1:] if ":" in group[0] else []
        options: List[Tuple[str, str]] = []
        for part in (p.strip() for chunk in raw for p in chunk.split(";")):
            if not part:
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise argparse.ArgumentTypeError(f"{group[0]!r}: expected key=value options, got {part!r}")
            options.append((key.strip(), value.strip()))
        if kind == SORT and options:
            raise argparse.ArgumentTypeError("'sort' takes no options (they are the plugin's)")
        if len({k for k, _ in options}) != len(options):
            raise argparse.ArgumentTypeError(f"{group[0]!r}: an option is given twice")
        if ":" in group[0] and not options:
            raise argparse.ArgumentTypeError(f"{group[0]!r}: no options after ':'")
        spec = ManagerSpec(kind, tuple(options))
        try:
            validate_options(spec.options_dict())
        except ValueError as error:
            raise argparse.ArgumentTypeError(f"{spec.label}: {error}") from None
        if spec.label in (s.label for s in specs):
            raise argparse.ArgumentTypeError(f"{spec.label!r} is given twice")
        specs.append(spec)
    if not specs:
        raise argparse.ArgumentTypeError("expected managers, e.g. sort,adaptive")
    return specs


def parse_kills(text: str) -> List[Optional[str]]:
    """``"none,mid-reduce"`` -> [None, "mid-reduce"]: the fault points of ``--kill``, no repeats."""
    kills: List[Optional[str]] = []
    for item in _items(text):
        if item not in (NO_KILL, *KILL_POINTS):
            raise argparse.ArgumentTypeError(
                f"unknown kill point {item!r}; choose from {', '.join((NO_KILL, *KILL_POINTS))}"
            )
        kill = None if item == NO_KILL else item
        if kill in kills:
            raise argparse.ArgumentTypeError(f"kill point {item!r} is given twice")
        kills.append(kill)
    if not kills:
        raise argparse.ArgumentTypeError(f"expected one or more of {', '.join((NO_KILL, *KILL_POINTS))}")
    return kills


def _cluster(text: str) -> ClusterSpec:
    try:
        return parse_cluster(text)
    except ClusterSpecError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _master(text: str) -> str:
    if not re.fullmatch(r"spark://[^\s/]+:[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r}: expected a standalone master URL spark://HOST:PORT")
    return text.strip()


def parse_conf(text: str) -> Tuple[str, str]:
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    if key in OWNED_KEYS:
        raise argparse.ArgumentTypeError(f"{key} is set by the harness: use {OWNED_KEYS[key]}")
    return key, value.strip()


def _items(text: str) -> List[str]:
    return [item.strip() for item in re.split(r",", text) if item.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pyspark_shuffle bench",
        description=(
            "Benchmark shuffle managers on a local-cluster, a namespace cluster (--cluster) or a standalone "
            "master (--master): every (workload, skew, manager) runs "
            "--repeat times, each run a fresh Spark application in a child process, managers "
            "alternating; prints a table of medians and the ratio of each manager's wall time to sort's."
        ),
    )
    add = parser.add_argument
    add(
        "--managers",
        type=parse_managers,
        default=parse_managers("sort,adaptive"),
        metavar="LIST",
        help="managers to compare, e.g. 'sort,adaptive,adaptive:in_flight_increment=4m' "
        "(options after ':' are configure() keywords, separated by ',' or ';'); default sort,adaptive",
    )
    add(
        "--workload",
        type=parse_workloads,
        default=["dummy"],
        metavar="NAME[,NAME]",
        help="dummy (DummyRDD shuffle), join (skewed fact joined with a dimension, broadcast off), "
        "groupby (skewed fact shuffled by key and aggregated), sql (star-schema joins and aggregations, "
        "AQE on, many small shuffles), coalesced (a 2100-partition groupBy AQE coalesces), "
        "aggregate (a SQL group-by with sum, count and avg over --keys keys, AQE on: local "
        "reduction's workload; --size at 16 bytes a row), reducebykey (the same rows summed by a "
        "JVM RDD's reduceByKey) or slowreduce (the fact shuffled by key and every payload hashed "
        "16 times on the reduce side: fetched blocks wait in memory; the fetch budget's "
        "workload); comma-separated for several; default dummy",
    )
    add(
        "--skew",
        type=parse_skews,
        default=[0.0, 1.0, 2.0, 3.0],
        metavar="LIST",
        help="Zipf exponents of the destinations/keys, e.g. 0,1,2,3 (the default); 0 is uniform",
    )
    add(
        "--size",
        type=_size,
        default=parse_size("512m"),
        metavar="SIZE",
        help="bytes shuffled (dummy) or fact table size (join, groupby), e.g. 512m (default)",
    )
    add(
        "--partition-size",
        type=_size,
        default=parse_size("8m"),
        metavar="SIZE",
        help="bytes per map partition; size / partition size map and reduce partitions (default 8m)",
    )
    add(
        "--cluster",
        type=_cluster,
        metavar="SPEC",
        help="run on a namespace cluster brought up for the benchmark and taken down after it, e.g. "
        "workers=4,link=250mbit,link-of=3:62500kbit,memory=2g (keys: workers, cores, memory, link, "
        "link-of, memory-cap, disk-rate, name, subnet); needs root",
    )
    add(
        "--master",
        type=_master,
        metavar="URL",
        help="run on this running standalone master (e.g. one of `python -m pyspark_shuffle cluster up`)",
    )
    add("--executors", type=_positive_int, default=2, help="local-cluster executors (default 2)")
    add("--executor-cores", type=_positive_int, default=1, help="cores per executor (default 1)")
    add(
        "--executor-memory",
        type=_memory_mb,
        default=1024,
        metavar="SIZE",
        help="memory per executor, e.g. 1g (default); a number without unit is MiB",
    )
    add("--driver-memory", default="1g", metavar="SIZE", help="driver memory (default 1g)")
    add("--repeat", type=_positive_int, default=3, metavar="N", help="runs per combination (default 3)")
    add(
        "--warmup",
        type=_non_negative_int,
        default=0,
        metavar="N",
        help="runs of the workload in each application before the timed one, as in a long-lived "
        "application whose executors have run jobs before (notebooks, pipelines, the Thrift "
        "server); the first of them is timed too, and its figures print beside the warm ones as "
        "cold (default 0: every run is one cold job)",
    )
    add(
        "--conf",
        type=parse_conf,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Spark configuration for every run and manager (repeatable); overrides the harness defaults",
    )
    add("--json", dest="json_path", metavar="PATH", help="write the environment and every run record here")
    add("--plot", dest="plot_path", metavar="PATH", help="write a PNG of time and peak memory against skew")
    add("--seed", type=int, default=42, help="data seed, the same for every run (default 42)")
    add("--keys", type=_positive_int, default=10_000, help="distinct keys of the fact table (default 10000)")
    add(
        "--payload-bytes",
        type=_positive_int,
        default=200,
        metavar="N",
        help="payload bytes per fact row (default 200)",
    )
    add("--compressible", action="store_true", help="dummy workload: compressible payloads")
    add(
        "--pin-maps",
        dest="pin_hot",
        type=_positive_int,
        nargs="?",
        const=1,
        metavar="HOT",
        help="dummy workload: pin map task i to executor i mod n and reduce task r to executor "
        "(HOT - 1 + r) mod n (executors in host order; on a namespace cluster, HOT is the worker "
        "number of the hottest reduce partition; default 1), so that every manager moves the same "
        "bytes over the same links",
    )
    add(
        "--kill",
        dest="kills",
        type=parse_kills,
        default=[None],
        metavar="LIST",
        help="namespace cluster: per workload, skew and manager, a run for each point, e.g. "
        "none,after-map,mid-reduce: none (no fault), after-map (once every map task has finished) "
        "or mid-reduce (once half the reduce tasks have), where the executor of --kill-worker is "
        "SIGKILLed; the run records the map tasks and reduce tasks that had to run again",
    )
    add(
        "--kill-worker",
        type=_positive_int,
        default=2,
        metavar="N",
        help="the namespace-cluster worker whose executor --kill kills (default 2)",
    )
    add(
        "--profile",
        dest="profile_dir",
        nargs="?",
        const="bench-profiles",
        metavar="DIR",
        help="profile every executor of every run, stage by stage, with async-profiler (fetched "
        "from Maven Central once): print CPU seconds by phase of the shuffle per kind of stage, "
        "every manager side by side, and write per workload and skew a page of flame graphs, "
        "sort's beside the plugin's, under DIR (default bench-profiles)",
    )
    add(
        "--min-memory",
        nargs="?",
        const="executor",
        choices=["executor", "direct"],
        help="instead of timed runs, find each manager's smallest executor memory (from "
        "--executor-memory down, by bisection to 32 MiB) at which the workload completes with no "
        "task attempt failed or run again and nothing wrong in Spark's logs, and its wall time "
        "there and at twice that memory; 'direct': the smallest cap on the executors' direct "
        "memory (-XX:MaxDirectMemorySize, where fetched blocks wait) at --executor-memory, down to "
        "spark.network.maxRemoteBlockSizeFetchToMem (200m unless set), below which Spark starts no "
        "executor",
    )
    add(
        "--timeout",
        type=_positive_float,
        default=1800.0,
        metavar="SECONDS",
        help="a run still going after this long is killed and recorded as failed (default 1800)",
    )
    return parser


def parse_args(argv: Optional[Sequence[str]] = None) -> BenchConfig:
    parser = build_parser()
    ns = parser.parse_args(argv)
    if ns.partition_size > ns.size:
        parser.error(
            f"argument --partition-size: {format_size(ns.partition_size)} exceeds "
            f"--size {format_size(ns.size)}"
        )
    if "dummy" in ns.workload:
        try:
            DummySpec(ns.size, ns.partition_size)
        except ValueError as error:
            parser.error(f"argument --partition-size: {error}")
    uniform = [w for w in ns.workload if w in UNIFORM_KEY_WORKLOADS]
    if uniform and ns.skew != [0.0]:
        parser.error(
            f"argument --skew: the {' and '.join(uniform)} workload{'s' if len(uniform) > 1 else ''} "
            "draw keys uniformly (--keys sets how many); give --skew 0"
        )
    if set(ns.workload) & {"join", "groupby", "sql", "coalesced"}:
        if ns.size // (ns.payload_bytes + ROW_OVERHEAD_BYTES) < 1:
            parser.error(
                f"argument --size: {ns.size} bytes holds no fact row of {ns.payload_bytes} payload bytes"
            )
    try:
        parse_size(ns.driver_memory, default_unit="m")
    except ValueError as error:
        parser.error(f"argument --driver-memory: {ns.driver_memory!r}: {error}")
    conf = dict(ns.conf)
    cluster, master_url = ns.cluster, ns.master
    if cluster and master_url:
        parser.error("argument --master: give --cluster or --master, not both")
    if master_url:
        from ..cluster.state import find_by_master

        recorded = find_by_master(master_url)
        cluster = recorded.spec if recorded else None
    executors = ns.executors
    if cluster:
        executors = cluster.workers * (cluster.cores // ns.executor_cores)
        if ns.executor_cores > cluster.cores:
            parser.error(
                f"argument --executor-cores: {ns.executor_cores} exceeds the cluster's "
                f"{cluster.cores} per worker"
            )
        if ns.executor_memory > cluster.memory_mb:
            parser.error(
                f"argument --executor-memory: {ns.executor_memory}m exceeds the cluster's "
                f"{cluster.memory_mb}m per worker"
            )
    if ns.pin_hot is not None:
        if ns.workload != ["dummy"]:
            parser.error("argument --pin-maps: pins the dummy workload only; give --workload dummy")
        if ns.pin_hot > executors:
            parser.error(
                f"argument --pin-maps: executor {ns.pin_hot} of {executors}: "
                f"it must be between 1 and {executors}"
            )
    if ns.kills != [None]:
        if cluster is None:
            parser.error(
                "argument --kill: kills an executor of a namespace cluster; give --cluster "
                "(or --master of one brought up by `python -m pyspark_shuffle cluster up`)"
            )
        if ns.workload != ["dummy"]:
            parser.error(
                "argument --kill: times the kill by the dummy workload's stages; give --workload dummy"
            )
        if ns.kill_worker > cluster.workers:
            parser.error(
                f"argument --kill-worker: worker {ns.kill_worker} of {cluster.workers}: "
                f"it must be between 1 and {cluster.workers}"
            )
    config = BenchConfig(
        managers=ns.managers,
        workloads=ns.workload,
        skews=ns.skew,
        size_bytes=ns.size,
        partition_bytes=ns.partition_size,
        executors=executors,
        executor_cores=ns.executor_cores,
        executor_memory_mb=ns.executor_memory,
        driver_memory=ns.driver_memory,
        repeat=ns.repeat,
        warmup=ns.warmup,
        conf=conf,
        json_path=ns.json_path,
        plot_path=ns.plot_path,
        seed=ns.seed,
        keys=ns.keys,
        payload_bytes=ns.payload_bytes,
        compressible=ns.compressible,
        timeout_s=ns.timeout,
        cluster=cluster,
        master_url=master_url,
        pin_hot=ns.pin_hot,
        kills=ns.kills,
        kill_worker=ns.kill_worker,
        profile_dir=ns.profile_dir,
        min_memory=ns.min_memory,
    )
    try:
        check_with_configure(config)
    except (ValueError, TypeError, JarError) as error:
        parser.error(f"argument --managers: {error}")
    return config
