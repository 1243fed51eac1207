"""pytest plugin ``pyspark_shuffle`` (entry point ``pytest11``).

Fixtures:

- ``pyspark_shuffle_spark``: one SparkSession per test module (stopped when the module ends, so
  other modules may start sessions of their own), on ``local-cluster[2,1,1024]`` (or
  ``PYSPARK_SHUFFLE_TEST_MASTER``, a standalone master URL included) with the plugin configured
  and ``PYSPARK_SHUFFLE_TEST_CONF`` applied; it fails at setup unless the driver really runs the
  plugin's shuffle manager.
- ``pyspark_shuffle_cluster``: a namespace cluster (:mod:`pyspark_shuffle.cluster`) for the whole
  test session, specified by ``PYSPARK_SHUFFLE_TEST_CLUSTER`` (``bench --cluster`` syntax,
  default :data:`DEFAULT_TEST_CLUSTER`) and taken down at its end; the test is skipped, with the
  reason, where this process may not create namespaces. Its ``master_url`` goes to
  ``start_session(master=...)`` or ``ShuffleComparison(master=...)``.

Importing this module imports neither pyspark nor a JVM.
"""

from __future__ import annotations

import os

import pytest

CLUSTER_ENV = "PYSPARK_SHUFFLE_TEST_CLUSTER"
#: Its own name and subnet, so it never meets a cluster brought up by hand (default ``pss``).
DEFAULT_TEST_CLUSTER = "workers=3,cores=1,memory=1g,link=50mbit,name=pst,subnet=10.232.0.0/24"


@pytest.fixture(scope="session")
def pyspark_shuffle_cluster():
    from ..cluster import PrivilegeError, lifecycle, parse_cluster, require_privileges

    spec = parse_cluster(os.environ.get(CLUSTER_ENV, "").strip() or DEFAULT_TEST_CLUSTER)
    try:
        require_privileges()
    except PrivilegeError as error:
        pytest.skip(str(error))
    with lifecycle.running(spec) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def pyspark_shuffle_spark():
    from ..sessions import PLUGIN, start_session

    spark = start_session(PLUGIN, app_name="pyspark-shuffle-pytest")
    try:
        yield spark
    finally:
        spark.stop()


def pytest_report_header(config):
    from .. import _jars

    try:
        return f"pyspark-shuffle jar: {_jars.jar_path()}"
    except Exception as error:  # shown in the header, raised again where the jar is used
        return f"pyspark-shuffle jar: unusable ({error})"
