"""Values the JVM side takes, checked in Python before a JVM sees them.

Java's integer limits, Spark's byte sizes (``JavaUtils.byteStringAs``), bounded whole numbers and
Zipf exponents. Every check raises ValueError with the reason only, such as "it must be
positive, got 0 bytes"; the caller names what was checked (a ``configure()`` option, a
DummyRDD argument, a command-line flag), so each rule is written once here.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

#: Largest Java Int and Long: partition counts, buffer sizes and chunk sizes are Ints in the
#: JVM, byte totals and seeds Longs.
INT_MAX = (1 << 31) - 1
LONG_MAX = (1 << 63) - 1

#: Spark's smallest executor heap: 1.5 x its 300 MiB reserved memory (UnifiedMemoryManager).
MIN_EXECUTOR_MEMORY_BYTES = 450 << 20

#: Spark's byte-size suffixes: binary multiples, case-insensitive.
_UNIT_BYTES = {
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "p": 1 << 50,
    "pb": 1 << 50,
}
_SIZE = re.compile(r"^(?P<number>-?[0-9]+)(?P<unit>[a-z]+)?$")
_CANONICAL_UNITS = (("g", 1 << 30), ("m", 1 << 20), ("k", 1 << 10))

SIZE_FORMS = "an int number of bytes or a string like '512k', '8m', '1g' (units b, k, m, g, t, p)"


def parse_size(value: Any, default_unit: str = "b") -> int:
    """Bytes of an int or of a Spark size string ("512k", "8m", "1g", "1024"); a string without
    unit is in ``default_unit``. Raises ValueError (with a reason) for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"expected {SIZE_FORMS}, got {type(value).__name__}")
    if isinstance(value, int):
        return value
    text = value.strip().lower()
    if re.fullmatch(r"-?[0-9]+\.[0-9]+[a-z]*", text):
        raise ValueError("fractional sizes are not supported by Spark")
    match = _SIZE.match(text)
    if match is None:
        raise ValueError(f"not a size: expected {SIZE_FORMS}")
    unit = match.group("unit") or default_unit
    if unit not in _UNIT_BYTES:
        raise ValueError(f"unknown size unit {unit!r} (units: b, k, m, g, t, p)")
    return int(match.group("number")) * _UNIT_BYTES[unit]


def format_size(size: int) -> str:
    """``size`` bytes as a Spark size string in the largest exact unit: 8388608 -> "8m"."""
    for suffix, factor in _CANONICAL_UNITS:
        if size and size % factor == 0:
            return f"{size // factor}{suffix}"
    return f"{size}b"


def size_between(value: Any, low: int, high: int = LONG_MAX, default_unit: str = "b") -> int:
    """The bytes of ``value`` (see :func:`parse_size`), which must lie in [low, high]."""
    size = parse_size(value, default_unit)
    if size < low and low == 1:
        raise ValueError(f"it must be positive, got {size} bytes")
    if not low <= size <= high:
        raise ValueError(f"{size} bytes is out of range: it must be between {low} and {high}")
    return size


def whole_number_between(value: Any, low: int, high: int) -> int:
    """``value``, an int (not a bool), which must lie in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"expected an int, got {type(value).__name__}")
    number = int(value)
    if not low <= number <= high:
        raise ValueError(f"it must be between {low} and {high}")
    return number


def zipf_exponent(value: Any) -> float:
    """``value`` as a Zipf exponent (skew): a finite real number >= 0; 0 is uniform."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"expected a number, got {type(value).__name__}")
    skew = float(value)
    if math.isnan(skew) or math.isinf(skew) or skew < 0:
        raise ValueError("it must be a finite number >= 0")
    return skew


def named(name: str, value: Any, check, *args: Any) -> Any:
    """``check(value, *args)``, its ValueError prefixed with "invalid <name> <value>: "."""
    try:
        return check(value, *args)
    except ValueError as error:
        raise ValueError(f"invalid {name} {value!r}: {error}") from None
