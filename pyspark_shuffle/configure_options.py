"""The keyword options of :func:`pyspark_shuffle.configure` and the Spark keys they set.

Every ``spark.shuffle.adaptive.*`` key is declared once, on the JVM side
(``config/AdaptiveShuffleConf.scala``), with the rule its values obey and its keyword here, and so
is every rule across keys (``config/KeyCombinations.scala``); ``conf_keys.json``, next to this
file, is generated from those declarations (a JVM test keeps it current). Python keeps one
normaliser per kind of rule, so a bad value fails here, before a JVM starts, with the JVM's words
for what is allowed.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .values import SIZE_FORMS, format_size, size_between

PREFIX = "spark.shuffle.adaptive."

#: The keys as the JVM declares them: key -> {"keyword", "default", "rule": {"kind", bounds...},
#: "allowed"}, in the documentation's order; and the rules across keys.
_DECLARED = json.loads((Path(__file__).with_name("conf_keys.json")).read_text(encoding="utf-8"))
JVM_KEYS: Dict[str, Dict[str, Any]] = {entry["key"]: entry for entry in _DECLARED["keys"]}
COMBINATIONS: List[Dict[str, Any]] = _DECLARED["combinations"]

#: configure()'s keyword for each key (after PREFIX), in the documentation's order.
KEYWORDS = {entry["keyword"]: entry["key"][len(PREFIX) :] for entry in _DECLARED["keys"]}


def _size(min_bytes: int, max_bytes: int) -> Callable[[Any], str]:
    def normalize(value: Any) -> str:
        return format_size(size_between(value, min_bytes, max_bytes))

    return normalize


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
        if not math.isfinite(number) or not (low <= number <= high):
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


def _parser(rule: Dict[str, Any]) -> Callable[[Any], str]:
    """The normaliser of one rule of ``conf_keys.json`` (ValueRule on the JVM side)."""
    kind = rule["kind"]
    if kind == "size":
        return _size(rule["min"], rule["max"])
    if kind == "number":
        return _number(rule["min"], rule.get("max", math.inf))
    if kind == "whole":
        return _number(rule["min"], rule["max"], integer=True)
    if kind == "choice":
        return _choice(*rule["values"])
    return {
        "boolean": _boolean,
        "duration": _duration,
        "directory": _directory,
    }[kind]


_FORMS = {"size": f", given as {SIZE_FORMS}"}


@dataclass(frozen=True)
class Option:
    """One keyword option of :func:`pyspark_shuffle.configure`."""

    name: str
    key: str
    allowed: str  # what values are accepted, in words
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


def _option(name: str, key: str) -> Option:
    declared = JVM_KEYS[key]
    rule = declared["rule"]
    allowed = declared["allowed"] + _FORMS.get(rule["kind"], "")
    if name.startswith("testing_"):
        allowed = "TESTING ONLY: " + allowed
    return Option(name=name, key=key, allowed=allowed, parse=_parser(rule))


OPTIONS: Dict[str, Option] = {name: _option(name, PREFIX + key) for name, key in KEYWORDS.items()}


def choices(name: str) -> Tuple[str, ...]:
    """The values the choice option ``name`` accepts."""
    return tuple(JVM_KEYS[OPTIONS[name].key]["rule"]["values"])


def default(name: str) -> Optional[str]:
    """The JVM's default of option ``name`` (None: the key has none)."""
    return JVM_KEYS[OPTIONS[name].key]["default"]


#: Spark key -> option, for look-ups from the Spark side.
OPTIONS_BY_KEY: Dict[str, Option] = {option.key: option for option in OPTIONS.values()}


def validate_options(options: Mapping[str, Any]) -> Dict[str, str]:
    """Spark key -> normalized value for the keyword ``options``; ``None`` values are skipped.

    Unknown keywords and invalid values raise ValueError naming the keyword, the Spark key and
    what is allowed."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(
            "unknown option%s %s for pyspark_shuffle.configure()%s; allowed options: %s"
            % (
                "s" if len(unknown) > 1 else "",
                ", ".join(repr(u) for u in unknown),
                _did_you_mean(unknown),
                describe_options(),
            )
        )
    return {
        OPTIONS[name].key: OPTIONS[name].normalize(value)
        for name, value in options.items()
        if value is not None
    }


def _did_you_mean(unknown: List[str]) -> str:
    """The known option nearest each unknown one, where one is near enough to be a likely typo
    (or the option named by its Spark key's suffix, e.g. ``maxBlockSize``)."""
    by_key = {o.key.rsplit(".", 1)[-1].lower(): o.name for o in OPTIONS.values()}
    guesses = []
    for name in unknown:
        folded = name.lower().replace("-", "_")
        match = by_key.get(folded.replace("_", "")) or next(
            iter(difflib.get_close_matches(folded, list(OPTIONS), n=1, cutoff=0.6)), None
        )
        if match:
            guesses.append(f"{name!r}: did you mean {match!r}?")
    return " (" + "; ".join(guesses) + ")" if guesses else ""


def describe_options() -> str:
    return "; ".join(f"{o.name} ({o.key}): {o.allowed}" for o in OPTIONS.values())
