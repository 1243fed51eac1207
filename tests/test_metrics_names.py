"""The counters pyspark_shuffle.metrics() documents are exactly those FetchCounters.toMap emits."""

import re
from pathlib import Path

import pyspark_shuffle
from pyspark_shuffle._metrics import COUNTER_NAMES

SOURCE = (
    Path(__file__).resolve().parents[1]
    / "jvm/src/main/scala/org/apache/spark/shuffle/adaptive/metrics/FetchCounters.scala"
)


def jvm_counter_names():
    text = SOURCE.read_text(encoding="utf-8")
    body = text[text.index("def toMap") :]
    body = body[: body.index("override def toString")]
    return re.findall(r'^\s*"([a-z_]+)" ->', body, flags=re.MULTILINE)


def test_counter_names_match_the_jvm():
    names = jvm_counter_names()
    assert len(names) >= 10 and len(set(names)) == len(names)
    assert tuple(names) == COUNTER_NAMES


def test_every_counter_is_documented():
    doc = pyspark_shuffle.metrics.__doc__
    missing = [name for name in COUNTER_NAMES if f"``{name}``" not in doc]
    assert not missing, f"undocumented counters: {missing}"
