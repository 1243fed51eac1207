"""A real multi-host Spark cluster on one machine (``python -m pyspark_shuffle cluster``).

A Spark standalone Master in the host namespace and one Worker per Linux network namespace,
each with its own IPv4 address on a bridge, its own work and local dirs and a link limited in
both directions with ``tc`` (optionally a memory cgroup and a disk throttle), started with
Spark's own classes from the pip-installed pyspark. The driver runs in the host namespace on the
bridge's address, so every block manager has its own host and shuffle blocks cross the links.

>>> from pyspark_shuffle import cluster
>>> with cluster.running(cluster.ClusterSpec(workers=3, link_bps=cluster.parse_rate("250mbit"))) as c:
...     spark = SparkSession.builder.master(c.master_url).config(
...         "spark.driver.host", c.spec.bridge_address).getOrCreate()

Needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN): without, :class:`PrivilegeError` before
anything is created.
"""

from .._driver_host import driver_host
from .faults import kill_executors, set_link
from .lifecycle import down, running, up
from .observe import status
from .spec import ClusterSpec, ClusterSpecError, format_rate, parse_cluster, parse_rate
from .state import ClusterState, find_by_master
from .system import ClusterError, PrivilegeError, require_privileges

__all__ = [
    "ClusterError",
    "ClusterSpec",
    "ClusterSpecError",
    "ClusterState",
    "PrivilegeError",
    "down",
    "driver_host",
    "find_by_master",
    "format_rate",
    "kill_executors",
    "parse_cluster",
    "parse_rate",
    "require_privileges",
    "running",
    "set_link",
    "status",
    "up",
]
