"""SparkSessions for A/B runs, tests and benchmarks: a local cluster (or a standalone master)
with the plugin, or with Spark's sort shuffle. The pytest plugin (:mod:`pyspark_shuffle.testing`)
and the benchmark harness (:mod:`pyspark_shuffle.bench`) both start their sessions here.

Both kinds get the same configuration except ``spark.shuffle.manager``: the plugin jar is on
``spark.jars`` in both, so the only difference between an A and a B run is the manager.

Environment overrides (applied to every session started here):

- ``PYSPARK_SHUFFLE_TEST_MASTER``: the master, default ``local-cluster[2,1,1024]`` (two
  executor JVMs with one core and 1 GiB each, so shuffle blocks really travel between JVMs), or
  a standalone master such as the namespace cluster's ``spark://10.231.0.1:PORT`` (``python -m
  pyspark_shuffle cluster up``): the driver then listens on this machine's address towards it.
- ``PYSPARK_SHUFFLE_TEST_CONF``: extra ``key=value,key=value`` Spark configuration.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Dict, Mapping, Optional

from . import spark_logs
from ._configure import configure
from ._driver_host import driver_host
from ._jvm import (
    SERVE_DELAY_KEY,
    SHUFFLE_MANAGER_CLASS,
    SORT_SHUFFLE_MANAGER_CLASS,
    active_shuffle_manager_class,
    serving_class,
)

MASTER_ENV = "PYSPARK_SHUFFLE_TEST_MASTER"
CONF_ENV = "PYSPARK_SHUFFLE_TEST_CONF"
DEFAULT_MASTER = "local-cluster[2,1,1024]"

PLUGIN = "plugin"
SORT = "sort"
MANAGER_CLASSES = {PLUGIN: SHUFFLE_MANAGER_CLASS, SORT: SORT_SHUFFLE_MANAGER_CLASS}


def manager_class(manager: str, conf: Mapping[str, str]) -> str:
    """The shuffle manager class a ``manager`` session runs with ``conf``: on a deliberately
    slowed executor (``SERVE_DELAY_KEY`` set) the plugin and Spark's sort shuffle each with
    that delay."""
    if manager not in MANAGER_CLASSES:
        raise ValueError(f"manager must be one of {sorted(MANAGER_CLASSES)}, got {manager!r}")
    return serving_class(MANAGER_CLASSES[manager], conf.get(SERVE_DELAY_KEY))


def base_conf(master: str = DEFAULT_MASTER) -> Dict[str, str]:
    """What every test session on ``master`` needs on this machine, whatever the manager."""
    host = driver_host(master)
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        # Executors of a pip-installed pyspark run Python workers with this interpreter.
        "spark.pyspark.python": sys.executable,
        # Loopback for local masters; towards a standalone master, the address its hosts reach.
        "spark.driver.host": host,
        "spark.driver.bindAddress": host,
    }
    local_cluster = re.fullmatch(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]", master)
    if local_cluster:
        # Spark starts the first job once any executor registered; a shuffle registered then
        # would place all its partitions on that one, and a comparison would depend on which
        # JVM came up first. Standalone waits for `spark.cores.max` cores (30 s at most).
        executors, cores = map(int, local_cluster.groups())
        conf["spark.cores.max"] = str(executors * cores)
        conf["spark.scheduler.minRegisteredResourcesRatio"] = "1.0"
    if master.startswith("spark://"):
        # Standalone executors do not inherit the driver's environment as local-cluster ones do;
        # this machine's workers share its files, so test modules import there as here.
        conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return conf


def parse_conf_env(text: Optional[str]) -> Dict[str, str]:
    """``key=value,key=value`` -> dict; ValueError naming the bad item."""
    result: Dict[str, str] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(
                f"{CONF_ENV}: expected key=value items separated by commas, got {item.strip()!r}"
            )
        result[key.strip()] = value.strip()
    return result


def resolve_master(environ: Mapping[str, str] = os.environ) -> str:
    return environ.get(MASTER_ENV, "").strip() or DEFAULT_MASTER


def session_conf(
    manager: str,
    conf: Optional[Mapping[str, Any]] = None,
    options: Optional[Mapping[str, Any]] = None,
    environ: Mapping[str, str] = os.environ,
    master: str = DEFAULT_MASTER,
) -> Dict[str, str]:
    """The full Spark configuration of a test session for ``manager`` ("plugin" or "sort"):
    :func:`base_conf`, then ``conf``, then ``PYSPARK_SHUFFLE_TEST_CONF``, then what
    :func:`pyspark_shuffle.configure` sets with ``options``; for "sort" the manager is then set
    back to Spark's sort shuffle (with ``SERVE_DELAY_KEY`` set, Spark's sort shuffle plus that
    delay), so the two differ in ``spark.shuffle.manager`` only."""
    manager_class(manager, {})  # validates the name before anything else
    from pyspark import SparkConf

    spark_conf = SparkConf(loadDefaults=False)
    merged = base_conf(master)
    merged.update({k: str(v) for k, v in (conf or {}).items()})
    merged.update(parse_conf_env(environ.get(CONF_ENV)))
    for key, value in merged.items():
        spark_conf.set(key, value)
    configure(spark_conf, **dict(options or {}))
    result = dict(spark_conf.getAll())
    result["spark.shuffle.manager"] = manager_class(manager, result)
    return result


def start_session(
    manager: str = PLUGIN,
    conf: Optional[Mapping[str, Any]] = None,
    options: Optional[Mapping[str, Any]] = None,
    master: Optional[str] = None,
    app_name: str = "pyspark-shuffle-test",
    environ: Mapping[str, str] = os.environ,
):
    """Start a new SparkSession with ``manager`` and check, through py4j, that the driver's
    SparkEnv runs that shuffle manager. Fails if a SparkContext is already running, since its
    shuffle manager cannot be changed. ``environ`` supplies ``PYSPARK_SHUFFLE_TEST_CONF``. Its
    driver and executors' logs are watched (:data:`pyspark_shuffle.spark_logs.WATCH`)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        raise RuntimeError(
            "a SparkContext is already running in this process; its shuffle manager cannot change. "
            "Stop it first (or run the comparison with ShuffleComparison, which uses fresh processes)."
        )
    master = master or resolve_master()
    # The driver JVM's own default address (its block manager and RPC), as spark.driver.host.
    os.environ["SPARK_LOCAL_IP"] = driver_host(master)
    # A SparkContext started from a running Python (not spark-submit) takes its workers'
    # interpreter from PYSPARK_PYTHON only (default "python3" on the PATH), not from
    # spark.pyspark.python: without this, workers run another Python than this one, one that
    # may lack pyspark_shuffle and the test's dependencies.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in session_conf(manager, conf, options, environ, master).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        check_manager(spark, manager)
        spark_logs.of_session(spark)
    except BaseException:
        spark.stop()
        raise
    return spark


def check_manager(spark: Any, manager: str) -> None:
    """Raise RuntimeError unless the driver of ``spark`` runs the shuffle manager ``manager``."""
    expected = manager_class(manager, dict(spark.sparkContext.getConf().getAll()))
    actual = active_shuffle_manager_class(spark)
    if actual != expected:
        raise RuntimeError(
            f"the {manager} session runs shuffle manager {actual}, expected {expected} "
            f"(spark.shuffle.manager={spark.sparkContext.getConf().get('spark.shuffle.manager')})"
        )
