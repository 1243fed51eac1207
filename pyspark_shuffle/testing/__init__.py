"""Test helpers for code that runs on the pyspark-shuffle plugin.

- :func:`start_session`: a ``local-cluster[2,1,1024]`` SparkSession with the plugin (or with
  Spark's sort shuffle), its manager checked through py4j.
- :class:`ShuffleComparison` / :func:`compare_shuffle_managers`: A/B runs of workloads
  ``f(spark) -> result`` under the sort shuffle and the plugin, asserting equal results.
- The pytest plugin (:mod:`pyspark_shuffle.testing.plugin`, registered as ``pyspark_shuffle``)
  provides the module-scoped fixture ``pyspark_shuffle_spark``.
"""

from ..sessions import (
    CONF_ENV,
    DEFAULT_MASTER,
    MASTER_ENV,
    PLUGIN,
    SORT,
    check_manager,
    parse_conf_env,
    resolve_master,
    session_conf,
    start_session,
)
from .compare import (
    ComparisonResult,
    ShuffleComparison,
    SideResult,
    WorkloadError,
    compare_shuffle_managers,
    difference,
)

__all__ = [
    "CONF_ENV",
    "ComparisonResult",
    "DEFAULT_MASTER",
    "MASTER_ENV",
    "PLUGIN",
    "SORT",
    "ShuffleComparison",
    "SideResult",
    "WorkloadError",
    "check_manager",
    "compare_shuffle_managers",
    "difference",
    "parse_conf_env",
    "resolve_master",
    "session_conf",
    "start_session",
]
