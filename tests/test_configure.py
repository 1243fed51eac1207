import sys

import pytest
from pyspark import SparkConf
from pyspark.sql import SparkSession

import pyspark_shuffle
from pyspark_shuffle import _profiler
from pyspark_shuffle._jvm import (
    EXPLAIN_PROVIDER_CLASS,
    RELIABLE_DATA_IO_CLASS,
    SHUFFLE_MANAGER_CLASS,
    SQL_EXTENSIONS_CLASS,
    STAGE_PROFILER_CLASS,
)

KEY = "spark.shuffle.adaptive.fetch.inFlightIncrement"


def test_import_is_light():
    import subprocess

    code = "import sys, pyspark_shuffle; print('pyspark' in sys.modules, 'py4j' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
    assert pyspark_shuffle.__version__ == "0.1.0"


def test_configure_builder_sets_jar_manager_and_options():
    builder = SparkSession.builder.appName("x")
    assert pyspark_shuffle.configure(builder, in_flight_increment="2048k") is builder
    options = builder._options
    assert options["spark.jars"] == ",".join(pyspark_shuffle.jar_paths())
    assert pyspark_shuffle.jar_paths()[0] == pyspark_shuffle.jar_path()
    assert options["spark.shuffle.manager"] == SHUFFLE_MANAGER_CLASS
    assert options[KEY] == "2m"
    assert "spark.master" not in options  # nothing started, nothing else touched


def test_configure_appends_to_existing_jars_once():
    builder = SparkSession.builder.config("spark.jars", "/opt/a.jar, /opt/b.jar")
    pyspark_shuffle.configure(builder)
    pyspark_shuffle.configure(builder)
    jars = ",".join(pyspark_shuffle.jar_paths())
    assert builder._options["spark.jars"] == "/opt/a.jar,/opt/b.jar," + jars
    given = ",".join("file:" + jar for jar in pyspark_shuffle.jar_paths())
    builder = SparkSession.builder.config("spark.jars", given)
    pyspark_shuffle.configure(builder)
    assert builder._options["spark.jars"] == given


def test_configure_adds_the_sql_extension_and_the_explain_provider_once():
    conf = SparkConf(loadDefaults=False).set("spark.sql.extendedExplainProviders", "com.example.Mine")
    pyspark_shuffle.configure(conf)
    pyspark_shuffle.configure(conf)
    assert conf.get("spark.sql.extensions") == SQL_EXTENSIONS_CLASS
    assert conf.get("spark.sql.extendedExplainProviders") == "com.example.Mine," + EXPLAIN_PROVIDER_CLASS


def test_configure_spark_conf():
    conf = SparkConf(loadDefaults=False).set("spark.jars", "/opt/a.jar")
    assert pyspark_shuffle.configure(conf, in_flight_increment=4096) is conf
    assert conf.get("spark.jars") == "/opt/a.jar," + ",".join(pyspark_shuffle.jar_paths())
    assert conf.get("spark.shuffle.manager") == SHUFFLE_MANAGER_CLASS and conf.get(KEY) == "4k"


def test_configure_a_slowed_executor_picks_the_slow_serving_plugin_from_the_testkit():
    from pyspark_shuffle._jars import testkit_jar_path
    from pyspark_shuffle._jvm import SERVE_DELAY_KEY, SLOW_SERVING_SHUFFLE_MANAGER_CLASS

    testkit = testkit_jar_path(pyspark_shuffle.jar_path())
    by_conf = pyspark_shuffle.configure(SparkConf(loadDefaults=False).set(SERVE_DELAY_KEY, "0:5"))
    assert by_conf.get("spark.shuffle.manager") == SLOW_SERVING_SHUFFLE_MANAGER_CLASS
    assert testkit in by_conf.get("spark.jars").split(",")
    plain = pyspark_shuffle.configure(SparkConf(loadDefaults=False))
    assert testkit not in plain.get("spark.jars").split(",")
    with pytest.raises(ValueError, match="testing_serve_delay"):
        pyspark_shuffle.configure(SparkConf(loadDefaults=False), testing_serve_delay="1:20")


@pytest.mark.parametrize("wrong", [SparkSession, {}, "spark", None])
def test_configure_wrong_type(wrong):
    with pytest.raises(TypeError, match="SparkSession.builder"):
        pyspark_shuffle.configure(wrong)


def test_configure_validates_before_touching_builder():
    builder = SparkSession.builder
    with pytest.raises(ValueError, match="in_flight_increment"):
        pyspark_shuffle.configure(builder, in_flight_increment="-1m")
    with pytest.raises(ValueError, match="allowed options"):
        pyspark_shuffle.configure(builder, inflight="1m")
    assert builder._options == {}


def test_increment_above_max_size_in_flight():
    builder = SparkSession.builder.config("spark.reducer.maxSizeInFlight", "4")  # MiB
    with pytest.raises(ValueError, match=r"spark.reducer.maxSizeInFlight \(4m\)"):
        pyspark_shuffle.configure(builder, in_flight_increment="5m")
    assert pyspark_shuffle.configure(builder, in_flight_increment="4m")._options[KEY] == "4m"
    with pytest.raises(ValueError, match="exceeds"):
        pyspark_shuffle.configure(SparkSession.builder, in_flight_increment="49m")  # default 48m


def test_increment_checked_against_max_in_flight_when_given():
    builder = SparkSession.builder.config("spark.reducer.maxSizeInFlight", "4")  # MiB
    # The plugin's own hard limit replaces Spark's reducer limit.
    pyspark_shuffle.configure(builder, in_flight_increment="6m", max_in_flight="12m")
    with pytest.raises(
        ValueError, match=r"max_in_flight \(spark.shuffle.adaptive.fetch.maxInFlight\) \(2m\)"
    ):
        pyspark_shuffle.configure(SparkSession.builder, in_flight_increment="3m", max_in_flight="2m")


TRANSPORT = "spark.shuffle.adaptive.transport"
UCX_PATH = "spark.shuffle.adaptive.ucx.libraryPath"


def test_configure_passes_the_ucx_wheel_libraries_where_a_transport_may_use_them(monkeypatch, tmp_path):
    from pyspark_shuffle import _ucx

    monkeypatch.setattr(_ucx, "library_dir", lambda: str(tmp_path))
    for transport in ("ucx", "auto"):
        builder = pyspark_shuffle.configure(SparkSession.builder.config(UCX_PATH, None), transport=transport)
        assert builder._options[TRANSPORT] == transport and builder._options[UCX_PATH] == str(tmp_path)
    conf = pyspark_shuffle.configure(SparkConf(loadDefaults=False), transport="netty")
    assert conf.get(UCX_PATH) is None
    conf = pyspark_shuffle.configure(
        SparkConf(loadDefaults=False), transport="ucx", ucx_library_path="/opt/ucx/lib"
    )
    assert conf.get(UCX_PATH) == "/opt/ucx/lib"


def test_configure_transport_ucx_without_ucx_fails_at_once(monkeypatch):
    from pyspark_shuffle import _ucx

    monkeypatch.setattr(_ucx, "library_dir", lambda: None)
    conf = SparkConf(loadDefaults=False)
    with pytest.raises(ValueError, match=r"transport='ucx'.*pyspark-shuffle\[ucx\].*'auto', 'netty'"):
        pyspark_shuffle.configure(conf, transport="ucx")
    assert conf.get("spark.shuffle.manager") is None
    assert pyspark_shuffle.configure(conf, transport="auto").get(UCX_PATH) is None


def test_configure_rejects_an_unknown_transport():
    with pytest.raises(ValueError, match=r"'rdma'.*spark.shuffle.adaptive.transport.*'auto', 'ucx', 'netty'"):
        pyspark_shuffle.configure(SparkConf(loadDefaults=False), transport="rdma")


def test_configure_replicated_push_sets_the_plugins_data_io_and_refuses_what_it_cannot_use():
    conf = pyspark_shuffle.configure(
        SparkConf(loadDefaults=False), mode="push", push_reliability="Replicated"
    )
    assert conf.get("spark.shuffle.adaptive.push.reliability") == "replicated"
    assert conf.get("spark.shuffle.sort.io.plugin.class") == RELIABLE_DATA_IO_CLASS
    # Without replication, Spark's own ShuffleDataIO stays.
    plain = pyspark_shuffle.configure(SparkConf(loadDefaults=False), mode="push")
    assert plain.get("spark.shuffle.sort.io.plugin.class") is None
    with pytest.raises(
        ValueError, match=r"push_reliability='replicated'.*mode='push'.*got mode='pull'.*'none'"
    ):
        pyspark_shuffle.configure(SparkConf(loadDefaults=False), push_reliability="replicated")
    other = SparkConf(loadDefaults=False).set("spark.shuffle.sort.io.plugin.class", "com.example.IO")
    with pytest.raises(ValueError, match=r"spark.shuffle.sort.io.plugin.class=.*com.example.IO"):
        pyspark_shuffle.configure(other, mode="push", push_reliability="replicated")
    with pytest.raises(ValueError, match=r"'twice'.*push.reliability.*'none', 'replicated'"):
        pyspark_shuffle.configure(SparkConf(loadDefaults=False), mode="push", push_reliability="twice")
    # mode="auto" pushes only some shuffles: a replicated map output must be pushed.
    with pytest.raises(ValueError, match=r"push_reliability='replicated'.*mode='push'.*got mode='auto'"):
        pyspark_shuffle.configure(SparkConf(loadDefaults=False), mode="auto", push_reliability="replicated")


def test_configure_auto_mode_takes_its_wait_share():
    conf = pyspark_shuffle.configure(SparkConf(loadDefaults=False), mode="Auto", push_auto_wait_share=0.3)
    assert conf.get("spark.shuffle.adaptive.mode") == "auto"
    assert conf.get("spark.shuffle.adaptive.push.autoWaitShare") == "0.3"
    with pytest.raises(ValueError, match=r"push_auto_wait_share"):
        pyspark_shuffle.configure(SparkConf(loadDefaults=False), mode="auto", push_auto_wait_share=1.5)


def test_configure_push_mode_refuses_the_external_shuffle_service():
    builder = SparkSession.builder.config("spark.shuffle.service.enabled", "true")
    with pytest.raises(ValueError) as info:
        pyspark_shuffle.configure(builder, mode="push")
    assert "spark.shuffle.adaptive.mode" in str(info.value) and "mode='push'" in str(info.value)
    assert "spark.shuffle.service.enabled=false" in str(info.value)
    # The retired mode is refused with what is allowed.
    with pytest.raises(ValueError, match="'pull', 'push', 'auto'"):
        pyspark_shuffle.configure(SparkConf(loadDefaults=False), mode="store")
    conf = pyspark_shuffle.configure(SparkConf(loadDefaults=False), mode="push", store_max_size="32m")
    assert conf.get("spark.shuffle.adaptive.mode") == "push"
    assert conf.get("spark.shuffle.adaptive.store.maxSize") == "32m"
    conf = pyspark_shuffle.configure(
        SparkConf(loadDefaults=False),
        mode="push",
        push_queue_size="8m",
        push_chunk_size="1m",
        push_max_block_size="64k",
        push_spill_to_peers=False,
    )
    assert conf.get("spark.shuffle.adaptive.push.queueSize") == "8m"
    assert conf.get("spark.shuffle.adaptive.push.chunkSize") == "1m"
    assert conf.get("spark.shuffle.adaptive.push.maxBlockSize") == "64k"
    assert conf.get("spark.shuffle.adaptive.push.spillToPeers") == "false"


def test_configure_profile_dir_adds_the_stage_profiler_and_async_profilers_jar(monkeypatch, tmp_path):
    jar = tmp_path / "async-profiler-4.6.jar"
    monkeypatch.setattr(_profiler, "jar", lambda: (str(jar), None))
    conf = SparkConf(loadDefaults=False).set("spark.plugins", "com.example.Probe")
    pyspark_shuffle.configure(conf, profile_dir=str(tmp_path / "profiles"))
    pyspark_shuffle.configure(conf)  # the key set before: once more, nothing twice
    assert conf.get("spark.plugins") == "com.example.Probe," + STAGE_PROFILER_CLASS
    assert conf.get("spark.jars").split(",") == [*pyspark_shuffle.jar_paths(), str(jar)]
    assert conf.get("spark.shuffle.adaptive.profile.dir") == str(tmp_path / "profiles")
    # Without the key, neither is added.
    plain = SparkConf(loadDefaults=False)
    pyspark_shuffle.configure(plain)
    assert plain.get("spark.plugins") is None


def test_configure_profile_dir_without_async_profiler_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(_profiler, "jar", lambda: (None, "async-profiler has no agent for Linux sparc64"))
    conf = SparkConf(loadDefaults=False)
    with pytest.raises(ValueError, match="profile_dir .*spark.shuffle.adaptive.profile.dir.* sparc64"):
        pyspark_shuffle.configure(conf, profile_dir=str(tmp_path))
    assert conf.get("spark.jars") is None
