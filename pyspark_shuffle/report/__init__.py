"""The skew report: per shuffle read, the reduce partitions' sizes (sorted, with a fitted Zipf
exponent), bytes and fetch wait per source executor, each reduce task's in-flight limit over
the stage and, in mode=push, how much came out of merged chunks; as one PNG per shuffle and a
table.

- ``python -m pyspark_shuffle report PATH``: PATH is a bench JSON (``bench --json``) or a Spark
  event log (a file, an application's rolling log directory or a ``spark.eventLog.dir``).
- :func:`skew_report` on a running session: the plugin's latest read of each shuffle.
"""

from __future__ import annotations

from typing import Any, List, Optional

from .data import ShuffleView, from_bench, from_event_log, live
from .figure import format_table, write
from .zipf import zipf_exponent

__all__ = [
    "ShuffleView",
    "format_table",
    "from_bench",
    "from_event_log",
    "live",
    "skew_report",
    "write",
    "zipf_exponent",
]


def skew_report(spark: Any, directory: Optional[str] = None) -> List[ShuffleView]:
    """The shuffles the plugin read in the running session ``spark``; with ``directory``, one
    PNG per shuffle is written there. Print :func:`format_table` of the result for the table."""
    views = live(spark)
    if directory is not None:
        write(views, directory)
    return views
