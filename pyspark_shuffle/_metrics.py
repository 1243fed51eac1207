"""``pyspark_shuffle.metrics(spark)``: the plugin's fetch counters, read from the driver."""

from __future__ import annotations

import json
from typing import Any, Dict

from ._jvm import java_spark_context, python_api

#: Counter names of one counters dict (the JVM's FetchCounters.toMap keys), in the order
#: ``docs/metrics.md`` lists them.
COUNTER_NAMES = (
    "reduce_tasks",
    "bytes_by_source",
    "blocks_by_source",
    "bytes_by_transport",
    "blocks_by_transport",
    "bytes_from_stores",
    "blocks_from_stores",
    "bytes_from_stores_by_source",
    "bytes_crossed_twice",
    "stored_reduce_tasks",
    "stored_reduce_tasks_on_owner",
    "bytes_at_owner",
    "chunks_read",
    "chunk_fallbacks",
    "chunks_at_peers",
    "chunks_in_ranges",
    "chunks_one_sided",
    "requests",
    "requests_by_transport",
    "transport_fallbacks",
    "direct_memory_deferrals",
    "corrupt_refetches",
    "fetch_wait_ms",
    "requests_to_disk",
    "executor_fetch_peak_bytes",
    "peak_bytes_in_flight",
    "buffered_byte_ms",
    "fetch_ms",
    "wait_ms_by_source",
    "host_by_source",
    "elastic_limit_min",
    "elastic_limit_max",
    "elastic_limit_changes",
    "tasks_by_remote_sources",
    "blocks_per_request",
    "mean_buffered_bytes",
    "mean_wait_ms_by_source",
    "observed_rate_by_source",
    "elastic_limit_mean",
    "combine",
)

#: Transport name of blocks a reduce task read from its own executor's files.
LOCAL_TRANSPORT = "local"


def metrics(spark: Any) -> Dict[str, Any]:
    """The plugin's shuffle-fetch counters of the application so far, as a dict::

        {"manager": "<class of the driver's shuffle manager>",
         "application": {<counters>},               # all finished reduce tasks
         "executors": {"<executor id>": {<counters>}},  # per executor the tasks ran on
         "combine": {"<shuffle id>": {<counters>}},  # local reduction, per shuffle combined
         "push": {"<shuffle id>": {<summary>}},     # mode="push", else {}
         "losses": {<counts>}}                       # push_reliability="replicated", else {}

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
    """
    sc = java_spark_context(spark)
    return json.loads(str(python_api(spark).metricsJson(sc)))


def total_bytes(counters: Dict[str, Any]) -> int:
    """All shuffle bytes one counters dict (``metrics(spark)["application"]`` or an executor's)
    records as fetched, whatever their source; 0 for an empty dict."""
    return int(sum((counters.get("bytes_by_transport") or {}).values()))


def fetch_memory_peaks(spark: Any) -> Dict[str, Dict[str, int]]:
    """Per executor id, the peaks of the direct memory its shuffle reads held, under any shuffle
    manager: ``netty_pooled_bytes`` (the pooled Netty memory of its block transfer service) and
    ``netty_direct_bytes`` (all direct memory Netty allocated), sampled every 50 ms by the
    ``spark.plugins`` probe :data:`~pyspark_shuffle._jvm.FETCH_MEMORY_PROBE_CLASS`; empty
    without it. Executors report a grown peak within about a second."""
    return json.loads(str(python_api(spark).fetchMemoryJson()))
