"""``pyspark_shuffle.metrics(spark)``: the plugin's fetch counters, read from the driver."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

from ._jvm import java_spark_context, python_api

#: The counters' names, as the JVM's tables declare them (``counters.json``, generated from
#: ``metrics/FetchCounters.scala`` and ``metrics/CombineCounters.scala``, which a JVM test keeps
#: current): those of one counters dict, in the order ``docs/metrics.md`` lists them, and those
#: of its ``combine`` dict.
_NAMES = json.loads(Path(__file__).with_name("counters.json").read_text(encoding="utf-8"))
COUNTER_NAMES = tuple(_NAMES["fetch"])
COMBINE_COUNTER_NAMES = tuple(_NAMES["combine"])


class CounterNames:
    """The declared counter names as attributes (``FETCH.bytes_by_transport``), so code that
    reads a counter by name fails on a name no table declares instead of finding nothing."""

    def __init__(self, names):
        self._names = frozenset(names)

    def __getattr__(self, name: str) -> str:
        if name.startswith("_") or name not in self._names:
            raise AttributeError(f"no counter {name!r}; declared: {', '.join(sorted(self._names))}")
        return name


FETCH = CounterNames(COUNTER_NAMES)
COMBINE = CounterNames(COMBINE_COUNTER_NAMES)

#: Transport name of blocks a reduce task read from its own executor's files.
LOCAL_TRANSPORT = "local"


def metrics(spark: Any) -> Dict[str, Any]:
    """The plugin's shuffle-fetch counters of the application so far, as a dict::

        {"manager": "<class of the driver's shuffle manager>",
         "application": {<counters>},               # all finished reduce tasks
         "since_mark": {<counters>},                # those after mark_metrics(spark), else {}
         "executors": {"<executor id>": {<counters>}},  # per executor the tasks ran on
         "combine": {"<shuffle id>": {<counters>}},  # local reduction, per shuffle combined
         "push": {"<shuffle id>": {<summary>}},     # mode="push", else {}
         "losses": {<counts>},                       # push_reliability="replicated", else {}
         "cpu": {"<shuffle id>": {"map": {...}, "reduce": {...}}}}  # executor CPU per stage side

    ``spark`` is a running SparkSession (or SparkContext). The driver first waits until its
    listener has handled every event already posted, so every finished task is counted. When the
    driver runs another shuffle manager, ``application`` and ``executors`` are empty dicts.

    Counters (each a dict under ``application`` and under every executor id): ``docs/metrics.md``
    lists every one, how it adds up across tasks and what it counts, generated from the JVM's
    tables of counters (``metrics/FetchCounters.scala``, ``metrics/CombineCounters.scala``). For
    instance ``bytes_by_transport`` (``{path: bytes}``: ``"local"``, ``"host-local"``,
    ``"netty"``, ``"ucx"``), ``fetch_wait_ms``, ``peak_bytes_in_flight``, and ``combine``, what
    local reduction did.

    :data:`COUNTER_NAMES` lists the counters' names.

    ``push`` (``mode="push"``): per shuffle, what its owners had merged when its map stage
    ended, as the driver collected it: ``merged_bytes`` of ``shuffle_bytes`` (the map outputs'
    sizes; ``merged_ratio``), ``partitions_merged``, ``chunks``, ``owners_asked`` and
    ``owners_answered``, and ``driver_state_bytes``, what the summary keeps on the driver (per
    partition a size and a compressed bitmap of the map outputs merged). Pushes still queued
    when the stage ended are merged later and are not in it. Then where its reduce tasks ran
    against its owners, from its finished reduce tasks: ``reduce_tasks``,
    ``reduce_tasks_reading_chunks`` and of those ``reduce_tasks_at_owner`` (at the executor that
    held most of what they read of chunks), ``bytes_read``, ``bytes_from_chunks`` and of those
    ``bytes_at_owner`` (held by the reading task's own executor: no network).

    ``losses`` (``push_reliability="replicated"``): ``executors_lost``, the executors the driver
    lost whose map outputs it checked, and of those map outputs ``map_outputs_kept`` (every
    non-empty block merged at a live executor: not run again) and ``map_outputs_rerun`` (marked
    for a rerun).

    ``cpu``: per shuffle, what the stages that wrote it (``map``, every attempt of its map stage)
    and the stages that read it (``reduce``) cost their executors, as Spark's task metrics add up
    (failed tasks' too): ``executor_cpu_s``, ``jvm_gc_s``, ``executor_run_s`` and ``tasks``. A
    stage that reads one shuffle and writes the next counts for both, and one that reads two (a
    join) counts whole for each. Kept, like ``combine``, for the newest 256 shuffles.
    """
    sc = java_spark_context(spark)
    return json.loads(str(python_api(spark).metricsJson(sc)))


def mark_metrics(spark: Any) -> None:
    """From now on :func:`metrics` also adds up the application's counters apart, under
    ``since_mark``: those of the tasks that end after this call (a benchmark's timed run after
    its warm-up runs, say). Nothing under another shuffle manager."""
    python_api(spark).markMetrics(java_spark_context(spark))


def total_bytes(counters: Dict[str, Any]) -> int:
    """All shuffle bytes one counters dict (``metrics(spark)["application"]`` or an executor's)
    records as fetched, whatever their source; 0 for an empty dict."""
    return int(sum((counters.get("bytes_by_transport") or {}).values()))


def fetch_memory_peaks(spark: Any) -> Dict[str, Dict[str, int]]:
    """Per executor id, the peaks of the direct memory its shuffle reads held, under any shuffle
    manager: ``netty_pooled_bytes`` (the pooled Netty memory of its block transfer service) and
    ``netty_direct_bytes`` (all direct memory Netty allocated) and, in mode=push, its merge
    store's figures as ``store_*`` (``store_used``, ``store_push_late``,
    ``store_released_after_read``, ...), sampled every 50 ms by the
    ``spark.plugins`` probe :data:`~pyspark_shuffle._jvm.FETCH_MEMORY_PROBE_CLASS`; empty
    without it. Executors report a grown peak within about a second."""
    return json.loads(str(python_api(spark).fetchMemoryJson()))


def fetch_memory_series(spark: Any) -> Dict[str, Dict[str, Any]]:
    """Per executor id, what it held over time, under any shuffle manager: ``{"bucket_ms",
    "start_ms": [epoch ms], field: {"max": [...], "mean": [...]}}`` for the heap live after
    collections (``live_heap_bytes``), all direct memory (``direct_bytes``), Netty's pool
    (``netty_pooled_bytes``), the bytes buffered in the pool fetched blocks arrive in
    (``buffered_bytes``: fetched and not yet consumed), RSS (``rss_bytes``) and what mode=push's
    merge store holds (``store_bytes``, 0 elsewhere), in buckets of
    ``bucket_ms`` of samples every 50 ms by the same probe as :func:`fetch_memory_peaks`; empty
    without it. Executors send their closed buckets every second."""
    return json.loads(str(python_api(spark).fetchMemorySeriesJson()))
