"""The plugin's counters in Spark's metrics system (source ``pyspark_shuffle``): the driver's
Prometheus servlet and the executors' sinks serve the values ``metrics(spark)`` reports.

Spark serves the Prometheus servlet from the driver's UI only (executors have no HTTP server),
so the executors' values are read from the CSV sink, which every executor writes each second.
"""

import csv
import functools
import re
import time
import urllib.request
from pathlib import Path

import pytest

import pyspark_shuffle
from pyspark_shuffle import DummyRDD
from pyspark_shuffle.frames import flatten
from pyspark_shuffle.sessions import PLUGIN, start_session

pytestmark = pytest.mark.integration

NAMESPACE = "pss"


STORE_BYTES = 256 * 1024


@pytest.fixture(scope="module")
def csv_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("metrics-csv")


@pytest.fixture(scope="module")
def spark(csv_dir):
    sink = "spark.metrics.conf.{}.sink.{}.{}".format
    conf = {
        "spark.ui.enabled": "true",
        "spark.ui.port": "0",
        "spark.metrics.namespace": NAMESPACE,
        sink("driver", "prometheusServlet", "class"): "org.apache.spark.metrics.sink.PrometheusServlet",
        sink("driver", "prometheusServlet", "path"): "/metrics/prometheus",
        sink("executor", "csv", "class"): "org.apache.spark.metrics.sink.CsvSink",
        sink("executor", "csv", "period"): "1",
        sink("executor", "csv", "unit"): "seconds",
        sink("executor", "csv", "directory"): str(csv_dir),
    }
    session = start_session(
        PLUGIN, conf, {"mode": "push", "store_max_size": STORE_BYTES, "push_max_block_size": "1m"}
    )
    try:
        DummyRDD(session, size="4m", skew=1.0, partition_size="256k", seed=3).run()
        yield session
    finally:
        session.stop()


def numbers(counters):
    """metrics(spark)'s nested maps as the source's dotted gauge names -> numbers."""
    flat = flatten(counters)
    return {k: v for k, v in flat.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def prometheus_gauges(spark):
    """Gauge name (as PrometheusServlet normalises it) -> value, from the driver's endpoint."""
    with urllib.request.urlopen(spark.sparkContext.uiWebUrl + "/metrics/prometheus", timeout=30) as page:
        text = page.read().decode()
    pattern = re.compile(r'^(metrics_\S+)_Value\{type="gauges"\} (\S+)$')
    return {m.group(1): float(m.group(2)) for m in map(pattern.match, text.splitlines()) if m}


def normalised(name):
    return re.sub("[^a-zA-Z0-9]", "_", f"metrics_{NAMESPACE}.driver.pyspark_shuffle.{name}")


def until_equal(read, timeout=60.0):
    """``read() -> (actual, expected)`` once the two are equal (the sinks report every second),
    else the last pair."""
    deadline = time.monotonic() + timeout
    while True:
        actual, expected = read()
        if actual == expected or time.monotonic() > deadline:
            return actual, expected
        time.sleep(0.5)


def reported_gauges(spark):
    """metrics(spark)'s driver sections under the names the driver's servlet gives them."""
    reported = pyspark_shuffle.metrics(spark)
    return numbers({section: reported[section] for section in ("application", "executors")})


def test_the_driver_serves_application_and_executor_counters(spark):
    expected = reported_gauges(spark)
    assert expected["application.reduce_tasks"] == 16

    def served_and_reported():
        # Both read anew each time: gauges such as a store's bytes in use change by themselves
        # once Spark's cleaner unregisters the shuffle.
        wanted = {normalised(name): float(value) for name, value in reported_gauges(spark).items()}
        gauges = prometheus_gauges(spark)
        return {name: gauges.get(name) for name in wanted}, wanted

    served, reported = until_equal(served_and_reported)
    assert served == reported


def csv_values(directory, prefix, names):
    """The last value the CSV sink wrote for each of ``names`` under ``prefix`` (None: none yet)."""
    values = {}
    for name in names:
        path = Path(directory) / f"{prefix}{name}.csv"
        rows = list(csv.reader(path.open())) if path.exists() else []
        values[name] = float(rows[-1][1]) if len(rows) > 1 else None
    return values


def written_and_reported(spark, csv_dir, executor):
    """(what the CSV sink last wrote for ``executor``'s fetch counters, metrics(spark)'s values)."""
    counters = pyspark_shuffle.metrics(spark)["executors"][executor]
    wanted = {name: float(value) for name, value in numbers(counters).items()}
    return csv_values(csv_dir, f"{NAMESPACE}.{executor}.pyspark_shuffle.fetch.", wanted), wanted


def test_each_executor_exports_its_own_counters(spark, csv_dir):
    executors = pyspark_shuffle.metrics(spark)["executors"]
    assert len(executors) == 2
    for executor in executors:
        written, reported = until_equal(functools.partial(written_and_reported, spark, csv_dir, executor))
        assert written == reported, executor
        # Its merge store's gauges too (mode=push).
        prefix = f"{NAMESPACE}.{executor}.pyspark_shuffle.store."
        store = until_equal(
            functools.partial(
                lambda prefix: (csv_values(csv_dir, prefix, ["capacity"]), {"capacity": float(STORE_BYTES)}),
                prefix,
            )
        )
        assert store[0] == store[1], executor
