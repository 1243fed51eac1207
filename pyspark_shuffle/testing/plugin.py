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
- ``pyspark_shuffle_logs`` (autouse): after each test, reads what the logs of every Spark
  application started so far gained (the driver's and each executor's, also of applications run
  in child processes, :mod:`pyspark_shuffle.spark_logs`) and fails the test on an uncaught
  exception, an ERROR naming the plugin's package or a lost executor. A test that causes one
  on purpose says so: ``@pytest.mark.spark_logs(killed=1, errors=[r"regex"])``.

Importing this module imports neither pyspark nor a JVM.
"""

from __future__ import annotations

import os
import tempfile

import pytest

from .. import spark_logs

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


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "spark_logs(lost_executors=0, errors=(), killed=0): what the test causes in Spark's logs on "
        "purpose: up to lost_executors executors lost per application, errors whose log entries "
        "match one of the errors patterns (re.search, stack included); killed: executors the test "
        "kills per application, lost with what their peers log of them",
    )
    # One directory of driver logs for this run and its child processes (A/B sides, benchmarks).
    os.environ.setdefault(spark_logs.LOG_DIR_ENV, tempfile.mkdtemp(prefix="pyspark-shuffle-logs-"))


def expected_logs(node) -> "spark_logs.Expected":
    """What ``node`` (a test, or a module) declares with ``@pytest.mark.spark_logs``."""
    marker = node.get_closest_marker("spark_logs")
    if marker is None:
        return spark_logs.NOTHING
    expected = spark_logs.Expected(
        lost_executors=int(marker.kwargs.get("lost_executors", 0)),
        errors=tuple(marker.kwargs.get("errors", ())),
    )
    return expected.with_killed(int(marker.kwargs["killed"])) if "killed" in marker.kwargs else expected


def _fail_on_findings(node) -> None:
    unexpected = expected_logs(node).unexpected(spark_logs.WATCH.read_new())
    if unexpected:
        pytest.fail(spark_logs.report(unexpected), pytrace=False)


@pytest.fixture(autouse=True)
def pyspark_shuffle_logs(request):
    yield
    _fail_on_findings(request.node)


@pytest.fixture(scope="module")
def pyspark_shuffle_spark(request):
    from ..sessions import PLUGIN, start_session

    spark = start_session(PLUGIN, app_name="pyspark-shuffle-pytest")
    try:
        yield spark
    finally:
        spark.stop()
        # What its driver and executors logged while stopping.
        _fail_on_findings(request.node)


def pytest_report_header(config):
    from .. import _jars

    try:
        return f"pyspark-shuffle jar: {_jars.jar_path()}"
    except Exception as error:  # shown in the header, raised again where the jar is used
        return f"pyspark-shuffle jar: unusable ({error})"
