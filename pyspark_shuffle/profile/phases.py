"""The phases of a shuffle a sampled stack belongs to, for map and reduce stages alike.

A stack's phase is decided by its thread (GC and JIT compiler threads) or else by the frame
nearest its leaf that a rule names: a checksum computed while a block is serialized counts as
checksum, the rest of the serializer's work as serialize. What no rule names is the task's own
work (``compute``: the operators before the shuffle and after it) on a task thread, and
``network`` or ``other`` on the executor's other threads."""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Dict, Sequence, Tuple

from .segments import Stacks

_ADAPTIVE = "org/apache/spark/shuffle/adaptive/"

#: (phase, pattern on a frame), tried from the leaf up; the first frame some pattern matches wins.
FRAME_RULES: Sequence[Tuple[str, "re.Pattern[str]"]] = [
    (phase, re.compile(pattern))
    for phase, pattern in (
        (
            "decompress",
            r"Decompressor|LZ4BlockInputStream|ZstdInputStream|Zstd\w*[Dd]ecompress"
            r"|SnappyInputStream|Snappy\.uncompress|decompress",
        ),
        (
            "compress",
            r"Compressor\b|Compressor\.|LZ4BlockOutputStream|ZstdOutputStream|Zstd\.compress"
            r"|SnappyOutputStream|Snappy\.compress|LZ4Compressor",
        ),
        (
            "checksum",
            r"java/util/zip/(CRC32|Adler32|Checksum)|CRC32C|shuffle/checksum/"
            r"|MutableCheckedOutputStream|ShuffleChecksum",
        ),
        (
            "deserialize",
            r"DeserializationStream|UnsafeRowSerializerInstance\$\$anon\$2"
            r"|java/io/ObjectInputStream|kryo/Kryo\.read|asKeyValueIterator",
        ),
        (
            "serialize",
            r"SerializationStream|UnsafeRowSerializerInstance\$\$anon\$1"
            r"|java/io/ObjectOutputStream|kryo/Kryo\.write",
        ),
        ("keep/fold", _ADAPTIVE + r"combine/"),
        ("push send", _ADAPTIVE + r"(push/map/|flow/RunSender)"),
        ("owner merge", _ADAPTIVE + r"(push/owner/|protocol/RunStream|memory/)"),
        (
            "write",
            r"DiskBlockObjectWriter|FileOutputStream\.write|FileChannelImpl\.(write|transfer)"
            r"|FileDispatcherImpl\.(p?write|force)|IndexShuffleBlockResolver\.write"
            r"|LocalDiskShuffleMapOutputWriter|ShufflePartitionPairsWriter",
        ),
        (
            "aggregate",
            r"hashAgg_|agg_doAggregate|UnsafeFixedWidthAggregationMap|BytesToBytesMap"
            r"|AggregationIterator|HashAggregateExec|ObjectHashAggregateExec|Aggregator\.combine"
            r"|ExternalAppendOnlyMap|/AppendOnlyMap",
        ),
        (
            "partition/sort",
            r"ExternalSorter|ShuffleExternalSorter|ShuffleInMemorySorter"
            r"|PartitionedPairBuffer|PartitionedAppendOnlyMap|BypassMergeSortShuffleWriter"
            r"|UnsafeShuffleWriter|SortShuffleWriter|RadixSort|TimSort|ShuffleExchangeExec",
        ),
        (
            "fetch",
            r"ShuffleBlockFetcherIterator|BlockStoreShuffleReader|"
            + _ADAPTIVE
            + r"(fetch|transport)/|org/apache/spark/network/|io/netty/|getLocalBlockData|jucx",
        ),
        ("python", r"org/apache/spark/api/python/"),
    )
]

#: Threads whose every sample is one phase, by the start of their name.
THREAD_RULES: Sequence[Tuple[str, "re.Pattern[str]"]] = [
    ("gc", re.compile(r"^(GC Thread|G1 |VM Thread|Gang worker|ParGC|Concurrent Mark|VM Periodic)")),
    # Linux keeps a thread's first 15 characters: "C2 CompilerThre".
    ("jit", re.compile(r"^(C[12] CompilerThre|Sweeper)")),
    # What the harness itself runs on every executor: process-tree metrics, the fetch memory
    # probe, this profiler.
    ("measuring", re.compile(r"^(executor-metrics-poller|fetch-memory-probe|stage-profiler)")),
]

TASK_THREAD = "Executor task launch worker"
NETWORK_THREAD = re.compile(r"^(shuffle-server|shuffle-client|rpc-|dispatcher|netty|block-manager)")

#: Every phase, in the order tables list them.
PHASES: Tuple[str, ...] = (
    "compute",
    "partition/sort",
    "serialize",
    "compress",
    "checksum",
    "write",
    "keep/fold",
    "push send",
    "owner merge",
    "fetch",
    "decompress",
    "deserialize",
    "aggregate",
    "python",
    "network",
    "gc",
    "jit",
    "measuring",
    "other",
)


def phase_of(thread: str, frames: Sequence[str]) -> str:
    for phase, pattern in THREAD_RULES:
        if pattern.match(thread):
            return phase
    for frame in reversed(frames):
        for phase, pattern in FRAME_RULES:
            if pattern.search(frame):
                return phase
    if thread.startswith(TASK_THREAD):
        return "compute"
    return "network" if NETWORK_THREAD.match(thread) else "other"


def phase_seconds(stacks: Stacks, seconds_per_sample: float) -> Dict[str, float]:
    """CPU seconds by phase (only the phases with samples)."""
    out: Dict[str, float] = defaultdict(float)
    for (thread, frames), count in stacks.items():
        out[phase_of(thread, frames)] += count * seconds_per_sample
    return dict(out)
