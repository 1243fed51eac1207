"""``pyspark_shuffle.metrics(spark)``: the plugin's fetch counters, read from the driver."""

from __future__ import annotations

import json
from typing import Any, Dict

from ._jvm import java_spark_context, python_api

#: Counter names of one counters dict (the JVM's FetchCounters.toMap keys), in its order.
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
    "chunks_read",
    "chunk_fallbacks",
    "chunks_at_peers",
    "chunks_in_ranges",
    "chunks_one_sided",
    "requests",
    "requests_by_transport",
    "transport_fallbacks",
    "direct_memory_deferrals",
    "blocks_per_request",
    "corrupt_refetches",
    "fetch_wait_ms",
    "peak_bytes_in_flight",
    "buffered_byte_ms",
    "fetch_ms",
    "mean_buffered_bytes",
    "wait_ms_by_source",
    "mean_wait_ms_by_source",
    "observed_rate_by_source",
    "host_by_source",
    "elastic_limit_min",
    "elastic_limit_max",
    "elastic_limit_mean",
    "elastic_limit_changes",
    "tasks_by_remote_sources",
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

    Counters (each a dict under ``application`` and under every executor id):

    - ``reduce_tasks``: the plugin's block fetchers that ran, one per reduce task.
    - ``bytes_by_source`` / ``blocks_by_source``: ``{executor id: n}``, the shuffle bytes and
      blocks served by each executor that wrote them (a task's own executor included).
    - ``bytes_by_transport`` / ``blocks_by_transport``: the same split by path: ``"local"``
      (read from the reducing executor's own files), ``"host-local"`` (read from the files of
      another executor on the same host, ``spark.shuffle.readHostLocalDisk``) or the network
      transport's name (``"netty"``). Both splits add up to the same total bytes (and blocks).
    - ``bytes_from_stores`` / ``blocks_from_stores``: (``mode="push"``) those read
      from an executor's in-memory shuffle store, the task's own or another's, rather than from
      a map-output file (in ``mode="push"``: out of merged chunks);
      ``bytes_from_stores_by_source``: ``{executor id: bytes}`` by store.
    - ``bytes_crossed_twice``: bytes read from another executor's store that came there from the
      executor that wrote them (pushed or spilled): they crossed the network after the map task
      and again.
    - ``chunks_read`` / ``chunk_fallbacks``: (``mode="push"``) merged reads, each one request of a
      chunk or of the chunks of consecutive small partitions at one owner, and those that could
      not be fetched, whose blocks were read from their map outputs; ``chunks_at_peers``: chunks
      read at a peer their owner had handed them off to; ``chunks_in_ranges``: chunks read as
      part of a partition range's one request; ``chunks_one_sided``: chunks read one-sided out of
      their holder's memory (``transport="ucx"``), each a read of its own that the holder does
      not serve.
    - ``stored_reduce_tasks`` / ``stored_reduce_tasks_on_owner``: reduce tasks that read from
      stores, and those of them that ran on the executor whose store held most of their stored
      bytes (in ``mode="push"``: their partition's owner).
    - ``requests``: fetch requests sent to other executors.
    - ``requests_by_transport``: ``{path: n}``, those requests by the path they took first
      (``"ucx"``, ``"host-local"`` or ``"netty"``).
    - ``transport_fallbacks``: blocks their first path could not serve (``"ucx"``: no
      registered region for the map output; ``"host-local"``: files not readable) that went to
      the next transport instead.
    - ``direct_memory_deferrals``: blocks deferred because Netty ran out of direct memory (asked
      for again once memory frees, up to ``spark.shuffle.maxAttemptsOnNettyOOM`` times).
    - ``blocks_per_request``: non-local blocks per request; 0.0 without requests.
    - ``corrupt_refetches``: blocks fetched a second time after a corrupt first copy.
    - ``fetch_wait_ms``: time tasks blocked waiting for remote blocks (as Spark's fetch wait
      time), in milliseconds.
    - ``peak_bytes_in_flight``: the most bytes one task had requested and not yet consumed (in
      flight plus fetched but unread); a maximum, not a sum, when merged.
    - ``buffered_byte_ms``: bytes in flight or unread, integrated over each task's fetch time
      (byte-milliseconds).
    - ``fetch_ms``: the tasks' fetch time those bytes were integrated over, in milliseconds.
    - ``mean_buffered_bytes``: ``buffered_byte_ms / fetch_ms``, the time-averaged buffer; 0.0
      when ``fetch_ms`` is 0.
    - ``wait_ms_by_source``: ``{executor id: ms}``, time tasks blocked waiting for each remote
      executor's blocks.
    - ``mean_wait_ms_by_source``: ``{executor id: ms}``, that wait per block served by the
      executor.
    - ``observed_rate_by_source``: ``{executor id: bytes per second}``, the rate the reading
      executor had observed from each remote executor (bytes over the time it had requests
      outstanding there) as its tasks ended, weighted by the bytes they read from it.
    - ``host_by_source``: ``{executor id: host}``, where the blocks came from.
    - ``elastic_limit_min`` / ``elastic_limit_max``: the smallest and largest in-flight byte
      limit any task had (0 until a task reported one; the max is the hard limit, and min equals
      max when the elastic limit is off).
    - ``elastic_limit_mean``: the in-flight limit averaged over fetch time, in bytes.
    - ``elastic_limit_changes``: how often tasks changed their in-flight limit.
    - ``tasks_by_remote_sources``: ``{"n": tasks}``, how many reduce tasks read blocks from n
      distinct remote executors ("0": only local blocks), i.e. what source selection had to
      choose from.
    - ``combine``: what local reduction did (map tasks' folds and reduce tasks' combined reads),
      a dict of the counters ``combine/CombineCounters.scala`` declares, each with what it
      counts: ``maps_folded``, ``rows_in``, ``rows_merged``, ``rows_out`` (combined rows read),
      ``bytes_out`` (their bytes) against ``bytes_replaced`` (the blocks they stood for),
      ``blocks_from_files`` and the others, and ``combine_ratio`` (``rows_in / rows_out``).

    :data:`COUNTER_NAMES` lists these names in the JVM's order.

    ``push`` (``mode="push"``): per shuffle, what its owners had merged when its map stage
    ended, as the driver collected it: ``merged_bytes`` of ``shuffle_bytes`` (the map outputs'
    sizes; ``merged_ratio``), ``partitions_merged``, ``chunks``, ``owners_asked`` and
    ``owners_answered``, and ``driver_state_bytes``, what the summary keeps on the driver (per
    partition a size and a compressed bitmap of the map outputs merged). Pushes still queued
    when the stage ended are merged later and are not in it.

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
