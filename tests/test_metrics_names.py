"""The counters pyspark_shuffle.metrics() documents are exactly those the JVM's tables declare:
``docs/metrics.md`` is generated from them (by ``make docs``, checked by the JVM's MetricsDocSuite)."""

import re
from pathlib import Path

import pyspark_shuffle
from pyspark_shuffle._metrics import COUNTER_NAMES

DOC = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"


def documented_names(section: str):
    text = DOC.read_text(encoding="utf-8")
    body = text[text.index(section) :]
    body = body[: body.index("\n## ", 1)] if "\n## " in body[1:] else body
    return re.findall(r"^\| `([a-z_]+)` \|", body, flags=re.MULTILINE)


def test_counter_names_match_the_jvm_tables():
    names = documented_names("## Fetch counters")
    assert len(names) >= 10 and len(set(names)) == len(names)
    assert tuple(names) == COUNTER_NAMES


def test_local_reduction_counters_are_documented():
    names = set(documented_names("## Local reduction"))
    assert {"maps_folded", "rows_in", "rows_out", "combine_ratio"} <= names


def test_the_docstring_points_at_the_generated_table():
    assert "docs/metrics.md" in pyspark_shuffle.metrics.__doc__
