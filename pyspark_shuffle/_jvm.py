"""Every JVM class name the Python package refers to, and the py4j look-ups that need them.

No other module of ``pyspark_shuffle`` spells a JVM class name: they import it from here, so
a rename on the Scala side is a one-line change on the Python side.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

#: ``spark.shuffle.manager`` value that selects the plugin.
SHUFFLE_MANAGER_CLASS = "org.apache.spark.shuffle.adaptive.AdaptiveShuffleManager"

#: spark.shuffle.sort.io.plugin.class under push_reliability="replicated".
RELIABLE_DATA_IO_CLASS = "org.apache.spark.shuffle.adaptive.AdaptiveShuffleDataIO"

#: ``spark.sql.extensions`` entry with the plugin's Spark SQL rules (local reduction's exchange).
SQL_EXTENSIONS_CLASS = "org.apache.spark.shuffle.adaptive.sql.AdaptiveShuffleExtensions"

#: ``spark.sql.extendedExplainProviders`` entry: what ``explain()`` and the SQL tab say of each
#: exchange (the plugin's and what it does, or why it is Spark's).
EXPLAIN_PROVIDER_CLASS = "org.apache.spark.shuffle.adaptive.sql.ExchangesExplained"

#: ``spark.plugins`` entry that samples the direct memory each executor's shuffle reads hold
#: (Netty's, which Spark's executor metrics miss), under any shuffle manager.
FETCH_MEMORY_PROBE_CLASS = "org.apache.spark.shuffle.adaptive.metrics.FetchMemoryProbe"

#: ``spark.plugins`` entry that profiles each executor's CPU stage by stage (async-profiler), under
#: any shuffle manager; ``configure(profile_dir=...)`` adds it.
STAGE_PROFILER_CLASS = "org.apache.spark.shuffle.adaptive.metrics.StageProfiler"

#: Spark's default shuffle manager (``spark.shuffle.manager=sort``).
SORT_SHUFFLE_MANAGER_CLASS = "org.apache.spark.shuffle.sort.SortShuffleManager"

#: Testing only (the testkit jar, not a user setting): ``executorId:millis`` pairs, executors
#: that sleep that long before they hand out each shuffle block, a slow node on one machine.
SERVE_DELAY_KEY = "spark.shuffle.adaptive.testing.serveDelay"

#: Testing only: Spark's sort shuffle plus ``SERVE_DELAY_KEY``, the
#: baseline for comparisons on a deliberately slowed executor.
SLOW_SERVING_SORT_SHUFFLE_MANAGER_CLASS = (
    "org.apache.spark.shuffle.adaptive.testing.SlowServingSortShuffleManager"
)

#: Testing only: the plugin plus that delay; ``configure`` chooses it when the delay is set.
SLOW_SERVING_SHUFFLE_MANAGER_CLASS = (
    "org.apache.spark.shuffle.adaptive.testing.SlowServingAdaptiveShuffleManager"
)

#: Each manager's class on a deliberately slowed executor (a serve delay set).
SLOW_SERVING = {
    SHUFFLE_MANAGER_CLASS: SLOW_SERVING_SHUFFLE_MANAGER_CLASS,
    SORT_SHUFFLE_MANAGER_CLASS: SLOW_SERVING_SORT_SHUFFLE_MANAGER_CLASS,
}

#: The classes ``configure`` sets ``spark.shuffle.manager`` to.
PLUGIN_CLASSES = (SHUFFLE_MANAGER_CLASS, SLOW_SERVING_SHUFFLE_MANAGER_CLASS)


def serving_class(manager_class: str, serve_delay: Optional[str]) -> str:
    """``manager_class``, or its slow-serving twin where ``serve_delay`` (testing only) is set."""
    return SLOW_SERVING[manager_class] if (serve_delay or "").strip() else manager_class


#: ``spark.shuffle.manager`` short names Spark resolves to its sort shuffle.
SORT_SHORT_NAMES = ("sort", "tungsten-sort")


def active_shuffle_manager_class(spark: Any) -> str:
    """Class name of the shuffle manager of the driver JVM behind ``spark`` (a SparkSession or
    SparkContext).

    Asks the plugin's facade, so it reports what Spark really instantiated, not what the
    configuration asked for. (py4j cannot call SparkEnv itself on every Spark: pyspark 4.3's
    jars lack a class one of its method signatures names.) A driver without the plugin jar runs
    what its ``spark.shuffle.manager`` names."""
    sc = _session_parts(spark)
    if driver_loads(sc._jvm, PYTHON_API_CLASS):
        return str(python_api(sc).shuffleManagerClass())
    configured = sc.getConf().get("spark.shuffle.manager", "sort")
    return SORT_SHUFFLE_MANAGER_CLASS if configured.lower() in SORT_SHORT_NAMES else configured


#: The one facade object the Python package calls through py4j (a Scala ``object``, so its
#: methods are reachable as static methods of this class name).
PYTHON_API_CLASS = "org.apache.spark.shuffle.adaptive.python.PythonApi"


def _session_parts(spark: Any) -> Any:
    """The SparkContext (Python) behind ``spark``, a SparkSession or a SparkContext."""
    sc = getattr(spark, "sparkContext", spark)
    if getattr(sc, "_jsc", None) is None or getattr(sc, "_jvm", None) is None:
        raise TypeError(
            "expected a running pyspark SparkSession or SparkContext (classic, not Spark Connect), "
            f"got {type(spark).__module__}.{type(spark).__qualname__}"
        )
    return sc


def python_api(spark: Any) -> Any:
    """The JVM facade :data:`PYTHON_API_CLASS` of the driver behind ``spark`` (a SparkSession or
    SparkContext), as a py4j ``JavaClass`` whose static methods are the facade's methods.

    Raises RuntimeError when the driver's class path has no such class (the plugin jar is not on
    ``spark.jars``, or it is an older build without the facade)."""
    from py4j.java_gateway import JavaClass

    sc = _session_parts(spark)
    target: Any = sc._jvm
    for part in PYTHON_API_CLASS.split("."):
        target = getattr(target, part)
    if not isinstance(target, JavaClass):
        raise RuntimeError(
            f"the driver JVM has no class {PYTHON_API_CLASS}: start the session with "
            "pyspark_shuffle.configure(...) so the plugin jar (a build that contains the Python "
            "facade) is on spark.jars"
        )
    return target


def java_spark_context(spark: Any) -> Any:
    """The JVM ``SparkContext`` (not the JavaSparkContext wrapper) behind ``spark``."""
    return _session_parts(spark)._jsc.sc()


def java_spark_session(spark: Any) -> Any:
    """The JVM ``SparkSession`` behind the pyspark SparkSession ``spark``."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        raise TypeError(
            "expected a classic pyspark SparkSession (not Spark Connect, not a SparkContext), got "
            f"{type(spark).__module__}.{type(spark).__qualname__}"
        )
    return jsession


#: The class loader Spark's launcher (SparkSubmit) gives the driver's threads: it holds the
#: driver's ``spark.jars`` as of the JVM's start, and its ``addURL`` is public.
MUTABLE_CLASS_LOADER_CLASS = "org.apache.spark.util.MutableURLClassLoader"


def running_driver_jvm() -> Any:
    """The py4j view of the driver JVM this Python process already started (an earlier
    SparkSession or SparkContext, stopped or not), or None when it has started none."""
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    return None if gateway is None else gateway.jvm


def driver_loads(jvm: Any, class_name: str) -> bool:
    """Whether the driver's threads can load ``class_name`` (through their context class loader,
    the one Spark instantiates a shuffle manager with)."""
    from py4j.protocol import Py4JJavaError

    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(class_name, False, loader)
        return True
    except Py4JJavaError:
        return False


def add_to_driver_class_path(jvm: Any, jars: Sequence[str]) -> bool:
    """Adds ``jars`` to the class loader of the driver's threads, as SparkSubmit does with the
    ``spark.jars`` it starts with; False (nothing added) when that loader is not Spark's
    :data:`MUTABLE_CLASS_LOADER_CLASS` (a JVM not started by SparkSubmit)."""
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    if not jvm.java.lang.Class.forName(MUTABLE_CLASS_LOADER_CLASS).isInstance(loader):
        return False
    for jar in jars:
        loader.addURL(jvm.java.io.File(jar).toURI().toURL())
    return True


#: The driver's own log, WARN and above, also written to a file: an appender of this name on
#: log4j's root logger (the driver JVM's logging is log4j 2, as every Spark 4's).
DRIVER_LOG_APPENDER = "pyspark-shuffle-driver-log"
DRIVER_LOG_PATTERN = "%d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex"


def log_driver_to(spark: Any, path: str) -> None:
    """Make the driver JVM behind ``spark`` log WARN and above to ``path`` as well (appending),
    unless it already logs to a file through this appender: one file per driver JVM."""
    jvm = _session_parts(spark)._jvm
    log4j = jvm.org.apache.logging.log4j
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    if config.getAppender(DRIVER_LOG_APPENDER) is not None:
        return
    layout = (
        log4j.core.layout.PatternLayout.newBuilder()
        .withPattern(DRIVER_LOG_PATTERN)
        .withConfiguration(config)
        .build()
    )
    appender = (
        log4j.core.appender.FileAppender.newBuilder()
        .setName(DRIVER_LOG_APPENDER)
        .withFileName(path)
        .withAppend(True)
        .setLayout(layout)
        .setConfiguration(config)
        .build()
    )
    appender.start()
    config.addAppender(appender)
    config.getRootLogger().addAppender(appender, log4j.Level.WARN, None)
    context.updateLoggers()


def driver_env(spark: Any, name: str) -> Optional[str]:
    """The environment variable ``name`` of the driver JVM behind ``spark`` (None if unset)."""
    value = _session_parts(spark)._jvm.java.lang.System.getenv(name)
    return None if value is None else str(value)
