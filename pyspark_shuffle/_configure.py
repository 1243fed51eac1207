"""``configure(builder, **options)``: point a SparkSession builder (or SparkConf) at the plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, List, Optional, Tuple, TypeVar

from . import _jars, _jvm, _ucx
from ._jvm import PLUGIN_CLASSES, RELIABLE_DATA_IO_CLASS, SHUFFLE_MANAGER_CLASS, SQL_EXTENSIONS_CLASS
from .configure_options import OPTIONS, validate_options
from .values import format_size, parse_size

B = TypeVar("B")

MAX_SIZE_IN_FLIGHT_KEY = "spark.reducer.maxSizeInFlight"
MAX_SIZE_IN_FLIGHT_DEFAULT = "48m"  # Spark's default; a value without unit is in MiB


def configure(builder: B, **options: Any) -> B:
    """Configure ``builder`` to run Spark with the pyspark-shuffle manager and return it.

    ``builder`` is a ``pyspark.sql.SparkSession.Builder`` (``SparkSession.builder``) or a
    ``pyspark.SparkConf``. Adds the bundled jars (:func:`jar_paths`) to ``spark.jars`` (appended to what is
    there, never twice), sets ``spark.shuffle.manager`` to the plugin and the
    ``spark.shuffle.adaptive.*`` keys of ``options``:

    - ``order``: "adaptive" (default), "naive" (Spark's random order), "pairwise" or "critical"
      (bottleneck first: every source with bytes left kept busy, the slowest to finish first);
    - ``in_flight_increment``: size one remote request aggregates blocks up to and the elastic
      limit's step, as int bytes or "512k", "8m", "1g"; positive, below 2g, at most the hard limit;
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
    - ``push_reliability``: with ``mode="push"``, "none" (default) or "replicated" (a lost
      executor's map outputs are read from the copies merged at other executors instead of
      being run again; also sets ``spark.shuffle.sort.io.plugin.class`` to the plugin's
      ShuffleDataIO, which tells Spark so);
    - ``combine``: local reduction (default True): the map outputs of aggregations (Spark SQL
      group-bys, RDD ``reduceByKey``/``aggregateByKey``/``combineByKey``) are combined per
      executor, one row per key, before reduce tasks read them; ``combine_max_memory`` bounds
      the heap one executor uses for it.

    It also appends the plugin's Spark SQL extension to ``spark.sql.extensions`` (never twice),
    which local reduction needs for Spark SQL aggregations.

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
    set_("spark.jars", jars)
    _locate_ucx(settings, get)
    set_("spark.shuffle.manager", _jvm.serving_class(SHUFFLE_MANAGER_CLASS, delay))
    set_(SQL_EXTENSIONS_KEY, append_extension(get(SQL_EXTENSIONS_KEY), SQL_EXTENSIONS_CLASS))
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


def _locate_ucx(settings: dict, get: Callable[[str], Optional[str]]) -> None:
    """Points the JVM at the UCX libraries of the ``libucx-cu11`` wheel when a transport may use
    them; with ``transport="ucx"`` and no UCX anywhere, fails now rather than in every task."""
    transport = settings.get(OPTIONS["transport"].key, get(OPTIONS["transport"].key) or "netty")
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
            f"{', '.join(_ucx.LIBRARIES)}); allowed transports without them: 'auto', 'netty'"
        )


def check_combinations(settings: dict, get: Callable[[str], Optional[str]]) -> None:
    """The rules across keys, which the JVM applies as well (config/Modes, flow/FlowSettings),
    applied to the validated ``settings`` and what ``get`` reads from the builder, so that a
    refused pair fails here, before a JVM starts. Adds the ShuffleDataIO replicated push needs."""
    _check_in_flight(settings, get(MAX_SIZE_IN_FLIGHT_KEY))
    _check_push_mode(settings, get)
    _set_reliability(settings, get)


SHUFFLE_SERVICE_KEY = "spark.shuffle.service.enabled"


def _check_push_mode(settings: dict, get: Callable[[str], Optional[str]]) -> None:
    """mode='push' serves merged chunks from executors' memory, which the external shuffle
    service cannot: the JVM refuses the pair, so refuse it here, before a JVM starts."""
    mode_key = OPTIONS["mode"].key
    mode = settings.get(mode_key, get(mode_key) or "pull")
    if mode != "pull" and (get(SHUFFLE_SERVICE_KEY) or "false").strip().lower() == "true":
        raise ValueError(
            f"mode={mode!r} ({mode_key}) needs {SHUFFLE_SERVICE_KEY}=false: the external shuffle "
            "service serves map-output files only; allowed modes with it: 'pull'"
        )


DATA_IO_KEY = "spark.shuffle.sort.io.plugin.class"


def _set_reliability(settings: dict, get: Callable[[str], Optional[str]]) -> None:
    """push_reliability='replicated' tells Spark, through the plugin's ShuffleDataIO, that map
    outputs outlive their executors; it needs mode='push', whose merged copies they are, and
    no other ShuffleDataIO."""
    key = OPTIONS["push_reliability"].key
    if settings.get(key, get(key) or "none") != "replicated":
        return
    mode_key = OPTIONS["mode"].key
    mode = settings.get(mode_key, get(mode_key) or "pull")
    if mode != "push":
        raise ValueError(
            f"push_reliability='replicated' ({key}) needs mode='push' ({mode_key}), got "
            f"mode={mode!r}: the copies that make a map output safe are the merged ones; "
            "allowed push_reliability without it: 'none'"
        )
    data_io = get(DATA_IO_KEY)
    if data_io not in (None, RELIABLE_DATA_IO_CLASS):
        raise ValueError(
            f"push_reliability='replicated' ({key}) needs {DATA_IO_KEY}={RELIABLE_DATA_IO_CLASS}, "
            f"and the builder sets {data_io}; allowed push_reliability with another "
            "ShuffleDataIO: 'none'"
        )
    settings[DATA_IO_KEY] = RELIABLE_DATA_IO_CLASS


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


def _check_in_flight(settings: dict, max_size_in_flight: Optional[str]) -> None:
    option = OPTIONS["in_flight_increment"]
    hard = OPTIONS["max_in_flight"]
    if option.key not in settings:
        return
    if hard.key in settings:
        limit, limit_name = parse_size(settings[hard.key]), f"max_in_flight ({hard.key})"
    else:
        raw = max_size_in_flight if max_size_in_flight is not None else MAX_SIZE_IN_FLIGHT_DEFAULT
        try:
            limit = parse_size(raw, default_unit="m")
        except ValueError as error:
            raise ValueError(f"invalid {MAX_SIZE_IN_FLIGHT_KEY} {raw!r}: {error}") from None
        limit_name = MAX_SIZE_IN_FLIGHT_KEY
    increment = parse_size(settings[option.key])
    if increment > limit:
        raise ValueError(
            f"invalid value {settings[option.key]!r} for option {option.name!r} (Spark key "
            f"{option.key}): it exceeds {limit_name} ({format_size(limit)}); "
            f"allowed: {option.allowed}"
        )


SQL_EXTENSIONS_KEY = "spark.sql.extensions"


def append_extension(extensions: Optional[str], extension: str) -> str:
    """``spark.sql.extensions`` value ``extensions`` with ``extension`` appended unless it lists
    it already."""
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
