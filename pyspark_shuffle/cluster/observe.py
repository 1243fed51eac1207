"""What a running namespace cluster reports: its master's status page, each worker's link and
executors, and what its daemons' and executors' logs hold."""

from __future__ import annotations

import glob
import json
import os
import urllib.request
from typing import Any, Dict, List

from .. import spark_logs
from . import plan, system
from .faults import executor_pids
from .spec import format_rate
from .state import ClusterState, require


def master_info(cluster: ClusterState, timeout: float = 5.0) -> Dict[str, Any]:
    """The master's ``/json/`` (workers, apps), {} when it does not answer."""
    if not cluster.master_webui:
        return {}
    try:
        with urllib.request.urlopen(f"{cluster.master_webui}/json/", timeout=timeout) as response:
            return json.loads(response.read().decode("utf-8"))
    except (OSError, ValueError):
        return {}


def status(name: str = "pss") -> Dict[str, Any]:
    """Workers (address, link rate, link up, live executors, registered) and the master."""
    cluster = require(name)
    spec = cluster.spec
    info = master_info(cluster, timeout=2.0)
    registered = {w.get("host"): w.get("state") for w in info.get("workers", [])}
    workers = []
    for worker in range(1, spec.workers + 1):
        address = spec.worker_address(worker)
        workers.append(
            {
                "worker": worker,
                "namespace": plan.netns(spec, worker),
                "address": address,
                "link": format_rate(spec.link_rate(worker)),
                "link_up": worker not in cluster.cut,
                "daemon_alive": system.alive(cluster.pids.get(f"worker-{worker}", -1)),
                "registered": registered.get(address, "no"),
                "executors": len(executor_pids(cluster, worker)),
            }
        )
    return {
        "name": cluster.name,
        "master_url": cluster.master_url,
        "master_webui": cluster.master_webui,
        "master_alive": system.alive(cluster.pids.get("master", -1)),
        "active_apps": [a.get("name") for a in info.get("activeapps", [])],
        "directory": cluster.directory,
        "spec": spec.to_json(),
        "workers": workers,
    }


def log_findings(cluster: ClusterState) -> List[spark_logs.Finding]:
    """What its master's, workers' and every executor's logs hold (:mod:`~pyspark_shuffle.spark_logs`)."""
    files: Dict[str, str] = {}
    for path in sorted(glob.glob(os.path.join(cluster.directory or "", "logs", "*.log"))):
        files[path] = os.path.basename(path)[: -len(".log")]
    for work_dir in cluster.work_dirs:
        for path in sorted(glob.glob(os.path.join(work_dir, "*", "*", "stderr"))):
            app, executor = path.split(os.sep)[-3:-1]
            files[path] = f"executor {executor} of {app}"
    return spark_logs.scan_files(files)
