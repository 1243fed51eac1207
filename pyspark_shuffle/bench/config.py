"""What one ``python -m pyspark_shuffle bench`` invocation runs: the managers, workloads and
Spark settings, as the command line (:mod:`.command_line`) gives them to the runner."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple

from ..cluster.spec import ClusterSpec

SORT = "sort"
ADAPTIVE = "adaptive"
MANAGER_KINDS = (SORT, ADAPTIVE)
WORKLOADS = ("dummy", "join", "groupby", "sql", "coalesced", "aggregate", "reducebykey", "slowreduce")

#: Keys the harness owns: each has its own option.
OWNED_KEYS = {
    "spark.shuffle.manager": "--managers",
    "spark.master": "--executors/--executor-cores/--executor-memory, --cluster or --master",
    "spark.executor.memory": "--executor-memory",
    "spark.executor.cores": "--executor-cores",
}


@dataclass(frozen=True)
class ManagerSpec:
    """One shuffle manager to benchmark: ``kind`` (sort or adaptive) with configure() options."""

    kind: str
    options: Tuple[Tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        if not self.options:
            return self.kind
        return self.kind + ":" + ",".join(f"{k}={v}" for k, v in self.options)

    def options_dict(self) -> Dict[str, str]:
        return dict(self.options)


@dataclass
class BenchConfig:
    managers: List[ManagerSpec]
    workloads: List[str]
    skews: List[float]
    size_bytes: int
    partition_bytes: int
    executors: int = 2
    executor_cores: int = 1
    executor_memory_mb: int = 1024
    driver_memory: str = "1g"
    repeat: int = 1
    #: ``--warmup``: runs of the workload in each application before the timed one (the first
    #: of them gives the cold figures), as long-lived applications have warm executors.
    warmup: int = 0
    conf: Dict[str, str] = field(default_factory=dict)
    json_path: Optional[str] = None
    plot_path: Optional[str] = None
    seed: int = 42
    keys: int = 10_000
    payload_bytes: int = 200
    compressible: bool = False
    timeout_s: float = 1800.0
    #: A namespace cluster: brought up for the run (``--cluster``) or found by ``master_url``.
    cluster: Optional[ClusterSpec] = None
    #: A standalone master (``--master``, or the URL of the cluster brought up for the run).
    master_url: Optional[str] = None
    #: ``--pin-maps``: the dummy workload's tasks pinned, the hottest reduce partition on this
    #: executor (from 1, in host order: a namespace cluster's worker number); None: not pinned.
    pin_hot: Optional[int] = None
    #: ``--kill``: per (workload, skew, manager), a run for each of these points (None: no fault,
    #: :data:`~pyspark_shuffle.bench.faults.KILL_POINTS` otherwise) at which the executor of
    #: namespace-cluster worker ``kill_worker`` is SIGKILLed.
    kills: List[Optional[str]] = field(default_factory=lambda: [None])
    kill_worker: int = 2
    #: ``--profile``: where each run's executor profiles, the flame-graph pages go (None: off).
    profile_dir: Optional[str] = None
    #: ``--min-memory``: find by bisection, instead of timed runs, each manager's smallest
    #: executor memory ("executor") or cap on its direct memory ("direct"); None: timed runs.
    min_memory: Optional[str] = None

    @property
    def num_partitions(self) -> int:
        return -(-self.size_bytes // self.partition_bytes)

    @property
    def master(self) -> str:
        if self.master_url:
            return self.master_url
        return f"local-cluster[{self.executors},{self.executor_cores},{self.executor_memory_mb}]"

    def to_json(self) -> dict:
        data = asdict(self)
        data["managers"] = [m.label for m in self.managers]
        data["master"] = self.master
        data["num_partitions"] = self.num_partitions
        data["cluster"] = self.cluster.to_json() if self.cluster else None
        return data


#: Bytes a fact row takes besides its payload in Spark's shuffle (UnsafeRow: null bits, id, key,
#: payload offset and length: 32; the serializer's record length: 4).
ROW_OVERHEAD_BYTES = 36

#: Bytes of a row of the aggregation workloads' table (a key and a value, two longs): ``--size``
#: over this is their row count.
KEYED_ROW_BYTES = 16

#: The workloads whose keys are drawn uniformly (skew does not apply to them).
UNIFORM_KEY_WORKLOADS = ("aggregate", "reducebykey")


def check_with_configure(config: BenchConfig) -> None:
    """Apply every adaptive option set, with the --conf settings, to a SparkConf through
    :func:`pyspark_shuffle.configure`: its errors (an increment above
    spark.reducer.maxSizeInFlight, a missing jar) stop the harness before any run."""
    from pyspark import SparkConf

    from .._configure import configure

    for spec in config.managers:
        conf = SparkConf(loadDefaults=False)
        for key, value in config.conf.items():
            conf.set(key, value)
        try:
            configure(conf, **spec.options_dict())
        except (ValueError, TypeError) as error:
            raise type(error)(f"{spec.label}: {error}") from None
