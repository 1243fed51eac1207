"""pytest plugin ``pyspark_shuffle`` (entry point ``pytest11``).

Fixture ``pyspark_shuffle_spark``: one SparkSession for the whole test session, on
``local-cluster[2,1,1024]`` (or ``PYSPARK_SHUFFLE_TEST_MASTER``) with the plugin configured and
``PYSPARK_SHUFFLE_TEST_CONF`` applied; it fails at setup unless the driver really runs the
plugin's shuffle manager. Importing this module imports neither pyspark nor a JVM.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def pyspark_shuffle_spark():
    from .session import PLUGIN, start_session

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
