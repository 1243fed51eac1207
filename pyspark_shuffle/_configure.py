"""``configure(builder, **options)``: point a SparkSession builder (or SparkConf) at the plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple, TypeVar

from . import _jars, _jvm, _profiler, _ucx
from ._jvm import (
    EXPLAIN_PROVIDER_CLASS,
    PLUGIN_CLASSES,
    SHUFFLE_MANAGER_CLASS,
    SQL_EXTENSIONS_CLASS,
    STAGE_PROFILER_CLASS,
)
from .configure_options import COMBINATIONS, KEYWORDS, OPTIONS, PREFIX, choices, default, validate_options
from .values import format_size, parse_size

B = TypeVar("B")


def configure(builder: B, **options: Any) -> B:
    """Configure ``builder`` to run Spark with the pyspark-shuffle manager and return it.

    ``builder`` is a ``pyspark.sql.SparkSession.Builder`` (``SparkSession.builder``) or a
    ``pyspark.SparkConf``. Adds the bundled jars (:func:`jar_paths`) to ``spark.jars`` (appended to what is
    there, never twice), sets ``spark.shuffle.manager`` to the plugin and the
    ``spark.shuffle.adaptive.*`` keys of ``options``:

    - ``order``: "adaptive" (default), "naive" (Spark's random order), "pairwise" or "critical"
      (bottleneck first: every source with bytes left kept busy, the slowest to finish first);
    - ``in_flight_increment``: size one remote request aggregates blocks up to and the elastic
      limit's step, about what a task that consumes slowly holds (default 1 MiB), as int bytes or
      "512k", "8m", "1g"; positive, below 2g, at most the hard limit;
    - ``max_in_flight``: the hard in-flight limit (default ``spark.reducer.maxSizeInFlight``);
    - ``executor_budget``: what all reduce tasks of one executor hold at once (in flight plus
      fetched and not yet consumed), whatever its task slots (default ``max_in_flight``; the
      increment shrinks to budget / slots where that is smaller);
    - ``elastic``: whether the in-flight limit adapts to the task (default True), with
      ``elastic_shrink_below`` and ``elastic_grow_above`` (fractions of the average wait);
    - ``wait_window``: how many recent waits the moving averages cover;
    - ``score_load_weight`` and ``score_wait_weight``: the adaptive source score's weights;
    - ``transport``: "netty" (default), "ucx" (one-sided reads through UCX; needs
      ``pip install 'pyspark-shuffle[ucx]'``, whose libraries are passed to the JVM as
      ``ucx_library_path``) or "auto" (UCX where it starts, else Netty); ``ucx_timeout``;
    - ``mode``: "pull" (default), "push" (shuffle-on-write) or "auto" (each shuffle pushed once
      reduce stages before it waited for blocks ``push_auto_wait_share`` of their time or more);
    - ``push_reliability``: with ``mode="push"``, "none" (default) or "replicated" (a lost
      executor's map outputs are read from the copies merged at other executors instead of
      being run again; also sets ``spark.shuffle.sort.io.plugin.class`` to the plugin's
      ShuffleDataIO, which tells Spark so);
    - ``combine``: local reduction (default True): the map outputs of aggregations (Spark SQL
      group-bys, RDD ``reduceByKey``/``aggregateByKey``/``combineByKey``) are combined per
      executor, one row per key, before reduce tasks read them; ``combine_max_memory`` bounds
      the heap one executor uses for it;
    - ``profile_dir``: profile every executor's CPU stage by stage (async-profiler, fetched from
      Maven Central once into ``~/.cache/pyspark-shuffle``); the driver writes each stage's
      stacks there (``pyspark_shuffle.profile`` reads them back), under any shuffle manager;
      ``profile_interval`` is the CPU time between two samples of a thread (default 10ms).

    It also appends the plugin's Spark SQL extension to ``spark.sql.extensions`` (never twice),
    which local reduction needs for Spark SQL aggregations, and its explain provider to
    ``spark.sql.extendedExplainProviders``: ``explain()`` then says of each exchange whether it
    is the plugin's, or why it is Spark's.

    ``conf/configuration.md`` describes each key.

    Everything is checked here, before any JVM starts: unknown or invalid options raise
    ValueError, a builder of another type TypeError, a missing jar or one built for another
    Spark release a :class:`pyspark_shuffle.JarError`. Options set on the builder after this
    call are not re-checked.
    """
    settings = validate_options(options)
    get, set_ = _accessors(builder)
    check_combinations(settings, get)
    plugin_jars = _jars.jar_paths()
    delay = get(_jvm.SERVE_DELAY_KEY)
    if (delay or "").strip():
        plugin_jars.append(_jars.testkit_jar_path(plugin_jars[0]))
    _prepare_running_driver(builder, plugin_jars)
    jars = get("spark.jars")
    for jar in plugin_jars:
        jars = append_jar(jars, jar)
    profiler_jar = _profiler_jar(settings, get)
    if profiler_jar:
        jars = append_jar(jars, profiler_jar)
        set_(PLUGINS_KEY, append_extension(get(PLUGINS_KEY), STAGE_PROFILER_CLASS))
    set_("spark.jars", jars)
    _locate_ucx(settings, get)
    set_("spark.shuffle.manager", _jvm.serving_class(SHUFFLE_MANAGER_CLASS, delay))
    set_(SQL_EXTENSIONS_KEY, append_extension(get(SQL_EXTENSIONS_KEY), SQL_EXTENSIONS_CLASS))
    set_(EXPLAIN_PROVIDERS_KEY, append_extension(get(EXPLAIN_PROVIDERS_KEY), EXPLAIN_PROVIDER_CLASS))
    for key, value in settings.items():
        set_(key, value)
    return builder


RESTART_HINT = (
    "Restart the Python process (in Jupyter: restart the kernel), then call "
    "pyspark_shuffle.configure(...) before the first getOrCreate()."
)


def _prepare_running_driver(builder: Any, jars: List[str]) -> None:
    """A notebook's usual flow: a plain SparkSession ran (and stopped) in this process before.
    Its driver JVM lives on, and Spark puts ``spark.jars`` on the driver's class path only when
    it starts that JVM, so the next session's driver could not load the plugin. The jars join
    the class loader every driver thread loads Spark's configured classes with (the one
    SparkSubmit gave the JVM's main thread, which py4j's and Spark's own threads inherit), as if
    they had been there from the start. A session still running without the plugin is refused:
    ``getOrCreate()`` would return it unchanged."""
    jvm = _jvm.running_driver_jvm()
    if jvm is None:
        return  # the driver JVM starts with spark.jars on its class path
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkContext._active_spark_context
    if active is not None:
        running = _jvm.active_shuffle_manager_class(active)
        if isinstance(builder, SparkSession.Builder) and running not in PLUGIN_CLASSES:
            raise RuntimeError(
                f"a SparkSession runs in this process with shuffle manager {running}, and "
                "getOrCreate() would return it unchanged: a running session's shuffle manager "
                "cannot change. Stop it first (spark.stop()), then call configure() again."
            )
        return
    if _jvm.driver_loads(jvm, SHUFFLE_MANAGER_CLASS):
        return
    if not _jvm.add_to_driver_class_path(jvm, jars):
        raise RuntimeError(
            "this Python process already started a Spark driver JVM without the pyspark-shuffle "
            "jar, and that JVM's class loader cannot take jars (it was not started by "
            f"spark-submit). {RESTART_HINT}"
        )


def _profiler_jar(settings: dict, get: Callable[[str], Optional[str]]) -> Optional[str]:
    """With ``profile_dir`` set, async-profiler's jar for the stage profiler (fetched from Maven
    Central once); fails now, with the reason, where it cannot be had."""
    key = OPTIONS["profile_dir"].key
    if not (settings.get(key) or get(key) or "").strip():
        return None
    path, why = _profiler.jar()
    if path is None:
        raise ValueError(
            f"profile_dir ({key}) needs async-profiler: {why}; leave profile_dir unset to run without"
        )
    return path


def _locate_ucx(settings: dict, get: Callable[[str], Optional[str]]) -> None:
    """Points the JVM at the UCX libraries of the ``libucx-cu11`` wheel when a transport may use
    them; with ``transport="ucx"`` and no UCX anywhere, fails now rather than in every task."""
    transport = settings.get(OPTIONS["transport"].key, get(OPTIONS["transport"].key) or default("transport"))
    path_key = OPTIONS["ucx_library_path"].key
    if transport == "netty" or settings.get(path_key) or get(path_key):
        return
    found = _ucx.library_dir()
    if found is not None:
        settings[path_key] = found
    elif transport == "ucx":
        raise ValueError(
            f"transport='ucx' ({OPTIONS['transport'].key}) needs the UCX libraries, and none are "
            f"installed: {_ucx.INSTALL_HINT}, or pass ucx_library_path= (a directory holding "
            f"{', '.join(_ucx.LIBRARIES)}); allowed transports without them: "
            + ", ".join(repr(c) for c in choices("transport") if c != "ucx")
        )


def check_combinations(settings: dict, get: Callable[[str], Optional[str]]) -> None:
    """The rules across keys (``COMBINATIONS``: declared once, on the JVM side, which applies
    them too), applied to the validated ``settings`` and what ``get`` reads from the builder, so
    that a refused pair fails here, before a JVM starts. Sets what a rule says ``configure()``
    sets (replicated push's ShuffleDataIO)."""
    for rule in COMBINATIONS:
        if rule["kind"] == "needs":
            _check_needs(rule, settings, get)
        elif rule["kind"] == "at_most":
            _check_at_most(rule, settings, get)


def _describe(key: str, value: str) -> str:
    """``key=value`` as a user of configure() says it: by keyword where the key has one."""
    keyword = _KEYWORD_OF.get(key)
    return f"{keyword}={value!r} ({key})" if keyword else f"{key}={value}"


def _check_needs(rule: dict, settings: dict, get: Callable[[str], Optional[str]]) -> None:
    key, other = rule["key"], rule["other"]
    value = str(settings.get(key, get(key) or rule["key_default"])).strip().lower()
    if value not in rule["values"]:
        return
    have = settings.get(other, get(other))
    if have is None and rule["set_by_configure"]:
        settings[other] = rule["other_value"]
        return
    have = str(have if have is not None else rule["other_default"]).strip()
    if have.lower() != rule["other_value"].lower():
        allowed = ", ".join(repr(v) for v in rule["allowed_without"])
        raise ValueError(
            f"{_describe(key, value)} needs {_describe(other, rule['other_value'])}, got "
            f"{_describe(other, have)}: {rule['why']}; allowed {_KEYWORD_OF.get(key, key)} "
            f"without it: {allowed}"
        )


def _check_at_most(rule: dict, settings: dict, get: Callable[[str], Optional[str]]) -> None:
    key = rule["key"]
    if key not in settings:
        return
    limit_key = rule["limit"] if settings.get(rule["limit"], get(rule["limit"])) is not None else None
    if limit_key is not None:
        raw = settings.get(limit_key, get(limit_key))
        limit = parse_size(raw)
        limit_name = f"{_KEYWORD_OF[limit_key]} ({limit_key})"
    else:
        raw = get(rule["fallback"]) or rule["fallback_default"]
        try:
            # Spark reads sizes without a unit in MiB there.
            limit = parse_size(raw, default_unit="m")
        except ValueError as error:
            raise ValueError(f"invalid {rule['fallback']} {raw!r}: {error}") from None
        limit_name = rule["fallback"]
    option = OPTIONS[_KEYWORD_OF[key]]
    if parse_size(settings[key]) > limit:
        raise ValueError(
            f"invalid value {settings[key]!r} for option {option.name!r} (Spark key "
            f"{key}): it exceeds {limit_name} ({format_size(limit)}); allowed: {option.allowed}"
        )


_KEYWORD_OF = {PREFIX + key: keyword for keyword, key in KEYWORDS.items()}


def _accessors(builder: Any) -> Tuple[Callable[[str], Optional[str]], Callable[[str, str], Any]]:
    module = type(builder).__module__ or ""
    if module.startswith("pyspark.sql.connect"):
        raise TypeError(
            "pyspark_shuffle.configure() got a Spark Connect builder: a Connect client cannot choose "
            "the server's shuffle manager. Configure the Spark Connect server with the plugin jar "
            "and spark.shuffle.manager instead."
        )
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    if isinstance(builder, SparkSession.Builder):

        def get(key: str) -> Optional[str]:
            value = builder._options.get(key)
            return None if value is None else str(value)

        return get, builder.config
    if isinstance(builder, SparkConf):
        return builder.get, builder.set
    hint = " (use SparkSession.builder, not SparkSession)" if builder is SparkSession else ""
    raise TypeError(
        "pyspark_shuffle.configure() expects a pyspark.sql.SparkSession.Builder "
        "(SparkSession.builder) or a pyspark.SparkConf, got %s%s"
        % (type(builder).__module__ + "." + type(builder).__qualname__, hint)
    )


SQL_EXTENSIONS_KEY = "spark.sql.extensions"
PLUGINS_KEY = "spark.plugins"
EXPLAIN_PROVIDERS_KEY = "spark.sql.extendedExplainProviders"


def append_extension(extensions: Optional[str], extension: str) -> str:
    """A comma-separated class list (``spark.sql.extensions``, ...) ``extensions`` with
    ``extension`` appended unless it lists it already."""
    entries = [entry.strip() for entry in (extensions or "").split(",") if entry.strip()]
    if extension not in entries:
        entries.append(extension)
    return ",".join(entries)


def _jar_entries(value: Optional[str]) -> List[str]:
    return [entry.strip() for entry in (value or "").split(",") if entry.strip()]


def _same_file(entry: str, jar: str) -> bool:
    path = entry
    for scheme in ("file://", "file:", "local://", "local:"):
        if path.startswith(scheme):
            path = path[len(scheme) :]
            break
    try:
        return Path(path).resolve() == Path(jar).resolve()
    except (OSError, ValueError):
        return False


def append_jar(jars: Optional[str], jar: str) -> str:
    """``spark.jars`` value ``jars`` with ``jar`` appended unless it lists it already."""
    entries = _jar_entries(jars)
    if not any(_same_file(entry, jar) for entry in entries):
        entries.append(jar)
    return ",".join(entries)
