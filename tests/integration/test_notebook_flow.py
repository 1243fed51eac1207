"""A notebook's usual flow, each order in a fresh Python process: a plain SparkSession first,
then one through configure() (the driver JVM started without the plugin jar), and the other
way round; and configure() refusing a plain session that still runs."""

import subprocess
import sys
import textwrap

import pytest

from pyspark_shuffle._child_process import child_env

pytestmark = pytest.mark.integration

PRELUDE = textwrap.dedent(
    """
    from pyspark.sql import SparkSession
    import pyspark_shuffle
    from pyspark_shuffle._jvm import SHUFFLE_MANAGER_CLASS, active_shuffle_manager_class

    def counts(spark):
        rdd = spark.sparkContext.parallelize(range(3000), 4).map(lambda x: (x % 7, 1))
        return sorted(rdd.reduceByKey(lambda a, b: a + b, 3).collect())

    def plain(master="local[2]", **conf):
        builder = SparkSession.builder.master(master)
        for key, value in conf.items():
            builder = builder.config(key, value)
        return builder.getOrCreate()
    """
)


def run(script):
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(script)],
        env=child_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    return done.stdout


def test_plain_session_first_then_the_plugin():
    out = run(
        """
        first = plain()
        expected = counts(first)
        assert active_shuffle_manager_class(first).endswith("SortShuffleManager")
        first.stop()
        # Executors of their own (local-cluster) and a driver JVM that started without the jar.
        builder = SparkSession.builder.master("local-cluster[2,1,1024]")
        spark = pyspark_shuffle.configure(builder, mode="push").getOrCreate()
        assert active_shuffle_manager_class(spark) == SHUFFLE_MANAGER_CLASS
        assert counts(spark) == expected
        assert pyspark_shuffle.metrics(spark)["application"]["reduce_tasks"] == 3
        spark.stop()
        print("plugin after plain: ok")
        """
    )
    assert "plugin after plain: ok" in out


def test_the_plugin_first_then_a_plain_session():
    out = run(
        """
        spark = pyspark_shuffle.configure(SparkSession.builder.master("local[2]")).getOrCreate()
        assert active_shuffle_manager_class(spark) == SHUFFLE_MANAGER_CLASS
        expected = counts(spark)
        spark.stop()
        # The driver JVM keeps the settings it started with as defaults (Spark's own rule), so
        # a session that wants Spark's shuffle says so.
        second = plain(**{"spark.shuffle.manager": "sort"})
        assert active_shuffle_manager_class(second).endswith("SortShuffleManager")
        assert counts(second) == expected
        second.stop()
        print("plain after plugin: ok")
        """
    )
    assert "plain after plugin: ok" in out


def test_a_running_plain_session_is_refused_with_what_to_do():
    out = run(
        """
        running = plain()
        try:
            pyspark_shuffle.configure(SparkSession.builder)
        except RuntimeError as error:
            assert "spark.stop()" in str(error) and "SortShuffleManager" in str(error), error
            print("refused: ok")
        finally:
            running.stop()
        """
    )
    assert "refused: ok" in out
