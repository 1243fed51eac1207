"""The state file of a cluster: everything ``up`` created, written before each thing is created,
so ``down`` can remove exactly that, also after the creating process crashed or was killed.

One JSON file per cluster name in :func:`state_dir` (``PYSPARK_SHUFFLE_CLUSTER_DIR``, else
``/run/pyspark-shuffle``, else the temp dir): namespaces and links vanish at reboot, and /run
with them.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional

from .plan import Resource
from .spec import ClusterSpec
from .system import ClusterError

STATE_DIR_ENV = "PYSPARK_SHUFFLE_CLUSTER_DIR"


def state_dir() -> str:
    configured = os.environ.get(STATE_DIR_ENV, "").strip()
    if configured:
        return configured
    if os.path.isdir("/run") and os.access("/run", os.W_OK):
        return "/run/pyspark-shuffle"
    return os.path.join(tempfile.gettempdir(), "pyspark-shuffle-clusters")


@dataclass
class ClusterState:
    spec: ClusterSpec
    resources: List[Resource] = field(default_factory=list)
    master_url: Optional[str] = None
    master_webui: Optional[str] = None
    directory: Optional[str] = None
    #: role ("master", "worker-3") -> pid of the process ``up`` started.
    pids: Dict[str, int] = field(default_factory=dict)
    cut: List[int] = field(default_factory=list)
    ready: bool = False
    #: pid of the process that ran ``up``: while it lives, the cluster may still be on its way up.
    creator: Optional[int] = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def path(self) -> str:
        return state_path(self.spec.name)

    @property
    def work_dirs(self) -> List[str]:
        """Each worker's work dir: ``<application id>/<executor id>/stderr`` in it are the logs
        of its executors."""
        if not self.directory:
            return []
        return [os.path.join(self.directory, f"worker-{w}", "work") for w in range(1, self.spec.workers + 1)]

    def record(self, resource: Resource) -> None:
        """Note ``resource`` as created (before creating it) and save."""
        if resource not in self.resources:
            self.resources.append(resource)
        self.save()

    def save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".state-", dir=os.path.dirname(self.path))
        with os.fdopen(fd, "w") as handle:
            json.dump(self.to_json(), handle, indent=1)
        os.replace(tmp, self.path)

    def to_json(self) -> Dict[str, Any]:
        data = asdict(self)
        data["spec"] = self.spec.to_json()
        data["resources"] = [asdict(r) for r in self.resources]
        return data

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ClusterState":
        return cls(
            spec=ClusterSpec.from_json(data["spec"]),
            resources=[Resource(**r) for r in data.get("resources", [])],
            master_url=data.get("master_url"),
            master_webui=data.get("master_webui"),
            directory=data.get("directory"),
            pids={k: int(v) for k, v in data.get("pids", {}).items()},
            cut=[int(w) for w in data.get("cut", [])],
            ready=bool(data.get("ready")),
            creator=data.get("creator"),
        )


def state_path(name: str) -> str:
    return os.path.join(state_dir(), f"{name}.json")


def load(name: str) -> Optional[ClusterState]:
    try:
        with open(state_path(name)) as handle:
            return ClusterState.from_json(json.load(handle))
    except FileNotFoundError:
        return None


def remove(name: str) -> None:
    try:
        os.remove(state_path(name))
    except FileNotFoundError:
        pass


def all_states() -> List[ClusterState]:
    try:
        names = sorted(
            f[:-5] for f in os.listdir(state_dir()) if f.endswith(".json") and not f.startswith(".")
        )
    except FileNotFoundError:
        return []
    return [s for s in (load(n) for n in names) if s is not None]


def find_by_master(master_url: str) -> Optional[ClusterState]:
    """The recorded cluster whose master is ``master_url`` (None for any other master)."""
    for candidate in all_states():
        if candidate.master_url and candidate.master_url.rstrip("/") == master_url.rstrip("/"):
            return candidate
    return None


def require(name: str) -> ClusterState:
    """The cluster recorded as ``name``; a ClusterError when none is up."""
    cluster = load(name)
    if cluster is None:
        raise ClusterError(f"no cluster {name!r} is up (no state file {state_path(name)})")
    return cluster
