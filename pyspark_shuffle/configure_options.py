"""The keyword options of :func:`pyspark_shuffle.configure` and the Spark keys they set.

One :class:`Option` per ``spark.shuffle.adaptive.*`` key declared in the JVM side's
``AdaptiveShuffleConf`` (``conf/configuration.md`` lists the same keys; a test keeps the two in
sync). Validation mirrors the JVM checks so a bad value fails in Python, before a JVM starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, Mapping, Tuple

from .values import INT_MAX, LONG_MAX, SIZE_FORMS, format_size, size_between

PREFIX = "spark.shuffle.adaptive."

#: The values of the choice keys, as AdaptiveShuffleConf declares them (a test compares them).
FETCH_ORDERS = ("adaptive", "naive", "pairwise", "critical")
TRANSPORTS = ("auto", "ucx", "netty")
MODES = ("pull", "store", "push")
OFFER_ORDERS = ("capacity", "pairwise", "naive")


def _size(min_bytes: int, max_bytes: int) -> Callable[[Any], str]:
    def normalize(value: Any) -> str:
        return format_size(size_between(value, min_bytes, max_bytes))

    return normalize


def _one_of(choices: Tuple[str, ...]) -> str:
    return "one of " + ", ".join(repr(c) for c in choices)


def _choice(*choices: str) -> Callable[[Any], str]:
    def normalize(value: Any) -> str:
        if not isinstance(value, str) or value.strip().lower() not in choices:
            raise ValueError("not one of the choices")
        return value.strip().lower()

    return normalize


def _boolean(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower()
    raise ValueError("not a boolean")


def _number(low: float, high: float, integer: bool = False) -> Callable[[Any], str]:
    def normalize(value: Any) -> str:
        if isinstance(value, bool):
            raise ValueError("not a number")
        try:
            number = int(value) if integer else float(value)
        except (TypeError, ValueError):
            raise ValueError("not a number") from None
        if integer and isinstance(value, float) and not value.is_integer():
            raise ValueError("not a whole number")
        if not (low <= number <= high) or number != number:
            raise ValueError(f"{number} is out of range")
        return str(number)

    return normalize


_DURATION = re.compile(r"^[0-9]+(ms|s|m|min|h)?$")


def _duration(value: Any) -> str:
    """Spark's time strings (JavaUtils.timeStringAs); an int or a bare number is in ms."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"expected an int (ms) or a string, got {type(value).__name__}")
    text = str(value).strip().lower()
    if not _DURATION.match(text) or re.match(r"^0+[a-z]*$", text):
        raise ValueError("not a positive duration")
    return text if text[-1].isalpha() else f"{text}ms"


def _directory(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {type(value).__name__}")
    return value


def _serve_delay(value: Any) -> str:
    if not isinstance(value, str) or not re.fullmatch(
        r"\s*|[^:,\s]+:[0-9]+(\s*,\s*[^:,\s]+:[0-9]+)*", value.strip()
    ):
        raise ValueError("not 'executorId:millis' pairs")
    return value.strip()


@dataclass(frozen=True)
class Option:
    """One keyword option of :func:`pyspark_shuffle.configure`."""

    name: str
    key: str
    allowed: str  # what values are accepted, in words
    doc: str
    parse: Callable[[Any], str]  # the Spark string for a value; ValueError with a reason

    def normalize(self, value: Any) -> str:
        """The string Spark expects for ``value``; ValueError naming the option when invalid."""
        try:
            return self.parse(value)
        except ValueError as error:
            raise ValueError(
                f"invalid value {value!r} for option {self.name!r} (Spark key {self.key}): "
                f"{error}; allowed: {self.allowed}"
            ) from None


OPTIONS: Dict[str, Option] = {
    option.name: option
    for option in (
        Option(
            name="order",
            key=PREFIX + "fetch.order",
            allowed=_one_of(FETCH_ORDERS),
            doc="Which remote executor a reduce task asks next (default 'adaptive').",
            parse=_choice(*FETCH_ORDERS),
        ),
        Option(
            name="in_flight_increment",
            key=PREFIX + "fetch.inFlightIncrement",
            allowed=(
                f"a positive size of at most 2g - 1 byte ({INT_MAX} bytes), given as "
                f"{SIZE_FORMS}; it must not exceed max_in_flight (default "
                "spark.reducer.maxSizeInFlight)"
            ),
            doc="Size one remote request aggregates blocks up to, and the elastic limit's step.",
            parse=_size(1, INT_MAX),
        ),
        Option(
            name="max_in_flight",
            key=PREFIX + "fetch.maxInFlight",
            allowed=f"a positive size, given as {SIZE_FORMS}",
            doc="Hard in-flight limit of a reduce task (default spark.reducer.maxSizeInFlight).",
            parse=_size(1, LONG_MAX),
        ),
        Option(
            name="elastic",
            key=PREFIX + "fetch.elastic.enabled",
            allowed="True or False",
            doc="Whether each reduce task adapts its in-flight limit (default True).",
            parse=_boolean,
        ),
        Option(
            name="elastic_shrink_below",
            key=PREFIX + "fetch.elastic.shrinkBelow",
            allowed="a number between 0 and 1",
            doc="Shrink after a wait of at most this fraction of the average wait (default 0.5).",
            parse=_number(0.0, 1.0),
        ),
        Option(
            name="elastic_grow_above",
            key=PREFIX + "fetch.elastic.growAbove",
            allowed="a finite number >= 0",
            doc="Grow after a wait longer than this fraction of the average wait (default 0.5).",
            parse=_number(0.0, 1e300),
        ),
        Option(
            name="wait_window",
            key=PREFIX + "fetch.waitWindow",
            allowed="a whole number between 1 and 100000",
            doc="How many recent waits the moving averages cover (default 16).",
            parse=_number(1, 100000, integer=True),
        ),
        Option(
            name="score_load_weight",
            key=PREFIX + "fetch.score.loadWeight",
            allowed="a finite number >= 0",
            doc="Weight of in-flight load in the adaptive source score (default 1.0).",
            parse=_number(0.0, 1e300),
        ),
        Option(
            name="score_wait_weight",
            key=PREFIX + "fetch.score.waitWeight",
            allowed="a finite number >= 0",
            doc="Weight per ms of average wait in the adaptive source score (default 0.1).",
            parse=_number(0.0, 1e300),
        ),
        Option(
            name="transport",
            key=PREFIX + "transport",
            allowed=_one_of(TRANSPORTS),
            doc="How other executors' blocks are read: UCX one-sided reads or Netty (default 'netty').",
            parse=_choice(*TRANSPORTS),
        ),
        Option(
            name="ucx_library_path",
            key=PREFIX + "ucx.libraryPath",
            allowed="a directory holding libucp.so.0 and the other UCX 1.18 libraries, or ''",
            doc="Where the JVM loads UCX from (configure() sets the libucx-cu11 wheel's).",
            parse=_directory,
        ),
        Option(
            name="ucx_timeout",
            key=PREFIX + "ucx.timeout",
            allowed="a positive duration: an int number of ms or a string like '500ms', '30s', '2min'",
            doc="How long a one-sided read may take (default spark.network.timeout).",
            parse=_duration,
        ),
        Option(
            name="mode",
            key=PREFIX + "mode",
            allowed=_one_of(MODES),
            doc="'store' also places map outputs in executors' bounded in-memory stores; 'push' "
            "pushes them in the background to their partitions' owners, which merge each "
            "partition into large chunks (default 'pull').",
            parse=_choice(*MODES),
        ),
        Option(
            name="store_max_size",
            key=PREFIX + "store.maxSize",
            allowed=f"a size >= 0, given as {SIZE_FORMS}",
            doc="Bytes one executor's shuffle store holds, off-heap (default 10% of executor memory).",
            parse=_size(0, LONG_MAX),
        ),
        Option(
            name="store_offer_order",
            key=PREFIX + "store.offerOrder",
            allowed=_one_of(OFFER_ORDERS),
            doc="Whom blocks the own store cannot hold are offered to first (default 'capacity').",
            parse=_choice(*OFFER_ORDERS),
        ),
        Option(
            name="push_queue_size",
            key=PREFIX + "push.queueSize",
            allowed=f"a size >= 0, given as {SIZE_FORMS}",
            doc="mode='push': bytes of map outputs one executor may have waiting to be pushed "
            "(default store_max_size).",
            parse=_size(0, LONG_MAX),
        ),
        Option(
            name="push_chunk_size",
            key=PREFIX + "push.chunkSize",
            allowed=f"a size > 0, given as {SIZE_FORMS}",
            doc="mode='push': the size of the chunks owners merge partitions into, each read in "
            "one request (default '4m').",
            parse=_size(1, LONG_MAX),
        ),
        Option(
            name="push_max_block_size",
            key=PREFIX + "push.maxBlockSize",
            allowed=f"a size > 0, given as {SIZE_FORMS}",
            doc="mode='push': blocks larger than this are read from their map outputs, not pushed "
            "(default '4k'; raise it where the network, not CPU, bounds the shuffle).",
            parse=_size(1, LONG_MAX),
        ),
        Option(
            name="testing_serve_delay",
            key=PREFIX + "testing.serveDelay",
            allowed="TESTING ONLY: '' or 'executorId:millis' pairs separated by commas, e.g. '1:50'",
            doc="Makes the named executors sleep before serving each shuffle block (a slow node).",
            parse=_serve_delay,
        ),
    )
}

#: Spark key -> option, for look-ups from the Spark side.
OPTIONS_BY_KEY: Dict[str, Option] = {option.key: option for option in OPTIONS.values()}


def validate_options(options: Mapping[str, Any]) -> Dict[str, str]:
    """Spark key -> normalized value for the keyword ``options``; ``None`` values are skipped.

    Unknown keywords and invalid values raise ValueError naming the keyword, the Spark key and
    what is allowed."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(
            "unknown option%s %s for pyspark_shuffle.configure(); allowed options: %s"
            % ("s" if len(unknown) > 1 else "", ", ".join(repr(u) for u in unknown), describe_options())
        )
    return {
        OPTIONS[name].key: OPTIONS[name].normalize(value)
        for name, value in options.items()
        if value is not None
    }


def describe_options() -> str:
    return "; ".join(f"{o.name} ({o.key}): {o.allowed}" for o in OPTIONS.values())
