"""Planning and running the benchmark: one child process (a fresh Spark application) per run."""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from .. import spark_logs
from .._child_process import run_module
from .._jvm import FETCH_MEMORY_PROBE_CLASS
from ..bench_run import BenchRun
from ..cluster import plan as cluster_plan
from ..configure_options import OPTIONS
from .config import BenchConfig, ManagerSpec
from .workloads import WORKLOAD_CONF

PROFILE_DIR_KEY = OPTIONS["profile_dir"].key


@dataclass(frozen=True)
class RunSpec:
    index: int  # position in the execution order, from 0
    repeat: int  # from 0
    workload: str
    skew: float
    manager: ManagerSpec
    kill: Optional[str] = None  # the --kill point of this run; None: no fault


def plan(config: BenchConfig) -> List[RunSpec]:
    """Every run in execution order: per repeat, per workload, skew and kill point, each manager
    once, so managers alternate (sort, adaptive, sort, adaptive, ...) and drift hits all of them;
    the manager order rotates by one each repeat, so none always goes first."""
    runs: List[RunSpec] = []
    managers = list(config.managers)
    for repeat in range(config.repeat):
        shift = repeat % len(managers)
        order = managers[shift:] + managers[:shift]
        for workload in config.workloads:
            for skew in config.skews:
                for kill in config.kills:
                    for manager in order:
                        runs.append(RunSpec(len(runs), repeat, workload, skew, manager, kill))
    return runs


def harness_conf(config: BenchConfig, workload: Optional[str] = None) -> Dict[str, str]:
    """Spark configuration of every run (of ``workload``'s runs: with its
    :data:`~pyspark_shuffle.bench.workloads.WORKLOAD_CONF`), before ``--conf``, which overrides it."""
    n = config.num_partitions
    conf = {
        # The REST API the metrics come from; port 0: any free port.
        "spark.ui.enabled": "true",
        "spark.ui.port": "0",
        "spark.ui.showConsoleProgress": "false",
        "spark.executor.memory": f"{config.executor_memory_mb}m",
        "spark.executor.cores": str(config.executor_cores),
        "spark.driver.memory": config.driver_memory,
        # Sample executor memory often and report it often, so short runs have peaks.
        "spark.executor.metrics.pollingInterval": "100ms",
        "spark.executor.heartbeatInterval": "500ms",
        # Peaks of the direct memory shuffle reads hold (Netty's, which Spark's executor metrics
        # miss), sampled every 50 ms under any manager, and of each executor's RSS.
        "spark.plugins": FETCH_MEMORY_PROBE_CLASS,
        "spark.executor.processTreeMetrics.enabled": "true",
        # Fixed reduce partitioning: AQE would coalesce or split skewed partitions, hiding the
        # shuffle's own behaviour; a broadcast join would have no shuffle.
        "spark.sql.adaptive.enabled": "false",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        "spark.sql.shuffle.partitions": str(n),
        "spark.default.parallelism": str(n),
    }
    if config.master.startswith("local-cluster"):
        # Spark turns host-local reads off on local-cluster unless set; on by default elsewhere,
        # as on a real host with several executors.
        conf["spark.shuffle.readHostLocalDisk"] = "true"
    if config.pin_hot is not None:
        # Pinned tasks wait for their executor rather than run elsewhere.
        conf["spark.locality.wait"] = "1h"
        if config.kills != [None]:
            # A killed executor's replacement on the same worker (node-local to its pinned tasks,
            # so on the same link) takes them after a second, not after every other pending task.
            conf["spark.locality.wait.process"] = "1s"
    conf.update(WORKLOAD_CONF.get(workload, {}))
    conf.update(config.conf)
    return conf


def job_for(config: BenchConfig, spec: RunSpec) -> Dict[str, Any]:
    job = {
        "manager": spec.manager.label,
        "manager_kind": spec.manager.kind,
        "options": spec.manager.options_dict(),
        "workload": spec.workload,
        "skew": spec.skew,
        "size_bytes": config.size_bytes,
        "partition_bytes": config.partition_bytes,
        "num_partitions": config.num_partitions,
        "seed": config.seed,
        "keys": config.keys,
        "payload_bytes": config.payload_bytes,
        "compressible": config.compressible,
        "executors": config.executors,
        "pin_hot": config.pin_hot,
        "master": config.master,
        "conf": harness_conf(config, spec.workload),
        "links": cluster_links(config),
        "warmup": config.warmup,
        "kill": None
        if spec.kill is None
        else {"point": spec.kill, "worker": config.kill_worker, "cluster": config.cluster.name},
    }
    if config.profile_dir:
        job["profile_dir"] = profile_run_dir(config.profile_dir, spec)
        job["conf"][PROFILE_DIR_KEY] = job["profile_dir"]
    return job


def profile_run_dir(profile_dir: str, spec: RunSpec) -> str:
    """Where the driver of one run writes its executors' profiles (a directory per application
    below it)."""
    name = f"{spec.index + 1:03d}-{spec.workload}-skew{spec.skew:g}-{spec.manager.label}"
    return os.path.join(os.path.abspath(profile_dir), "runs", re.sub(r"[^A-Za-z0-9_.-]+", "_", name))


def cluster_links(config: BenchConfig) -> Dict[str, Dict[str, Any]]:
    """Worker -> its link's host-side device, rate and the worker's address, on a namespace
    cluster ({} otherwise)."""
    spec = config.cluster
    if spec is None:
        return {}
    return {
        str(w): {
            "device": cluster_plan.host_link(spec, w),
            "rate_bps": spec.link_rate(w),
            "address": spec.worker_address(w),
        }
        for w in range(1, spec.workers + 1)
    }


def empty_record(config: BenchConfig, spec: RunSpec) -> BenchRun:
    return BenchRun(
        index=spec.index,
        repeat=spec.repeat,
        manager=spec.manager.label,
        manager_kind=spec.manager.kind,
        options=spec.manager.options_dict(),
        workload=spec.workload,
        skew=spec.skew,
        kill=spec.kill,
        size_bytes=config.size_bytes,
        partition_bytes=config.partition_bytes,
        num_partitions=config.num_partitions,
        seed=config.seed,
    )


def run_one(config: BenchConfig, spec: RunSpec) -> BenchRun:
    """Run ``spec`` in a child process; always returns a record (status "ok" or "failed")."""
    record = empty_record(config, spec)
    with tempfile.TemporaryDirectory(prefix="pyspark-shuffle-bench-") as tmp:
        in_path, out_path = os.path.join(tmp, "job.json"), os.path.join(tmp, "out.json")
        with open(in_path, "w") as handle:
            json.dump(job_for(config, spec), handle)
        child = run_module("pyspark_shuffle.bench.one_run", [in_path, out_path], config.timeout_s)
        record.process_s = round(child.seconds, 3)
        if child.timed_out:
            record.error = f"timeout: killed after {config.timeout_s:.0f} s\n{child.tail(20)}"
            return record
        if child.returncode != 0 or not os.path.exists(out_path):
            record.error = f"the run's process exited with code {child.returncode}:\n{child.tail(30)}"
            return record
        with open(out_path) as handle:
            outcome = json.load(handle)
    record.take(outcome)
    record.status = outcome.get("status", "failed")
    record.error = outcome.get("error")
    record.traceback = outcome.get("traceback")
    record.log_findings = log_findings(outcome, killed=spec.kill is not None)
    return record


def log_findings(outcome: Dict[str, Any], killed: bool) -> List[str]:
    """What the run's driver and executors logged that they should not have (a run that kills an
    executor on purpose may lose it): each finding's first line and stack."""
    if not outcome.get("logs"):
        return []
    expected = spark_logs.NOTHING.with_killed() if killed else spark_logs.NOTHING
    found = spark_logs.ApplicationLogs.from_dict(outcome["logs"]).findings()
    return [f"{f}\n{f.text}" for f in expected.unexpected(found)]


def write_json(path: str, env: Dict[str, Any], runs: List[BenchRun]) -> None:
    """Write ``{"env": ..., "runs": [...]}`` atomically (after every run: partial results survive)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".bench-", suffix=".json", dir=directory)
    with os.fdopen(fd, "w") as handle:
        json.dump({"env": env, "runs": [run.to_json() for run in runs]}, handle, indent=1, sort_keys=False)
        handle.write("\n")
    os.replace(tmp, path)


def run_all(
    config: BenchConfig,
    env: Dict[str, Any],
    log: Callable[[str], None] = print,
    runner: Callable[[BenchConfig, RunSpec], BenchRun] = run_one,
) -> List[BenchRun]:
    runs: List[BenchRun] = []
    specs = plan(config)
    for spec in specs:
        log(
            f"[{spec.index + 1}/{len(specs)}] repeat {spec.repeat + 1}/{config.repeat} "
            f"{scenario(spec.workload, spec.kill)} skew={spec.skew:g} {spec.manager.label}: running"
        )
        record = runner(config, spec)
        runs.append(record)
        log(f"[{spec.index + 1}/{len(specs)}] {progress_text(record)}")
        if config.json_path:
            write_json(config.json_path, env, runs)
    return runs


def progress_text(record: BenchRun) -> str:
    head = f"{scenario(record.workload, record.kill)} skew={record.skew:g} {record.manager}: "
    if not record.ok:
        first = (record.error or "unknown error").splitlines()[0]
        return head + f"FAILED ({first})"
    parts = [f"wall {record.wall_s:.1f}s"]
    if record.cold:
        parts.append(f"cold wall {record.cold['wall_s']:.1f}s")
    if record.map_stage_s is not None:
        parts.append(f"map {record.map_stage_s:.1f}s reduce {record.reduce_stage_s:.1f}s")
    if record.shuffle_write_bytes is not None:
        parts.append(f"shuffle write {mib(record.shuffle_write_bytes)}")
    if record.kill:
        fault = record.fault or {}
        parts.append(
            f"killed worker {fault.get('worker')} at {fault.get('at_s')}s, "
            f"{record.map_tasks_rerun} map and {record.reduce_tasks_rerun} reduce tasks rerun"
        )
    if record.max_reduce_partition_bytes is not None:
        parts.append(f"max reduce partition {mib(record.max_reduce_partition_bytes)}")
    if record.peak_executor_memory_bytes is not None:
        parts.append(f"peak executor memory {mib(record.peak_executor_memory_bytes)}")
    if record.process_s is not None:
        parts.append(f"process {record.process_s:.1f}s")
    if record.log_findings:
        parts.append(f"{len(record.log_findings)} finding(s) in Spark's logs")
    return head + "ok, " + ", ".join(parts)


def scenario(workload: str, kill: Optional[str]) -> str:
    """The workload as tables name it: with its kill point, if any."""
    return workload if kill is None else f"{workload} kill={kill}"


def mib(value: Optional[float]) -> str:
    return "-" if value is None else f"{value / (1 << 20):.1f} MiB"
