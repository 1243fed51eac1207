"""The segments a stage profiler wrote for one application: ``segments.jsonl`` (one line per
segment: its executor, the stages whose tasks ran in it, its sampling interval, its stacks'
file) and each segment's stacks in async-profiler's collapsed format (``thread;frame;...;leaf
count``, the thread as ``[name tid=N]``)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

#: Samples per stack: ``(thread name, frames from the root to the leaf) -> count``.
Stacks = Counter


@dataclass
class Segment:
    executor: str
    seq: int
    stages: List[Tuple[int, int]]  # (stage id, attempt)
    start_ms: int
    end_ms: int
    event: str
    interval_ns: int
    stacks: Stacks = field(default_factory=Counter)

    @property
    def seconds_per_sample(self) -> float:
        return self.interval_ns / 1e9


def parse_collapsed(text: str) -> Stacks:
    """``[thread tid=1];a;b 3`` lines -> {(thread, (a, b)): 3}."""
    stacks: Stacks = Counter()
    for line in text.splitlines():
        body, _, count = line.rstrip().rpartition(" ")
        if not body or not count.isdigit():
            continue
        frames = body.split(";")
        thread = ""
        if frames and frames[0].startswith("[") and frames[0].endswith("]"):
            thread = frames[0][1:-1].rsplit(" tid=", 1)[0]
            frames = frames[1:]
        stacks[(thread, tuple(frames))] += int(count)
    return stacks


def read_segments(directory: str) -> Tuple[List[Segment], Dict[str, str]]:
    """The segments under ``directory`` (an application's profile directory), and the executors
    that could not profile, with why."""
    root = Path(directory)
    segments: List[Segment] = []
    unavailable: Dict[str, str] = {}
    index = root / "segments.jsonl"
    if not index.is_file():
        return segments, unavailable
    for line in index.read_text().splitlines():
        if not line.strip():
            continue
        entry = json.loads(line)
        if "unavailable" in entry:
            unavailable[entry["executor"]] = entry["unavailable"]
            continue
        path = root / entry["file"]
        segments.append(
            Segment(
                executor=entry["executor"],
                seq=entry["seq"],
                stages=[(int(s), int(a)) for s, a in entry["stages"]],
                start_ms=entry["start_ms"],
                end_ms=entry["end_ms"],
                event=entry["event"],
                interval_ns=entry["interval_ns"],
                stacks=parse_collapsed(path.read_text()) if path.is_file() else Counter(),
            )
        )
    return segments, unavailable


def segment_kind(segment: Segment, kind_of_stage: Callable[[int], Optional[str]]) -> str:
    """What a segment's stages did ("map", "reduce", "other"; "idle": no task ran in it, only
    background work; "mixed": stages of several kinds ran in it at once)."""
    kinds = {kind_of_stage(stage) for stage, _ in segment.stages} - {None}
    if not segment.stages:
        return "idle"
    if len(kinds) == 1:
        return kinds.pop()
    return "mixed" if kinds else "other"


def stacks_by_kind(
    segments: List[Segment], kind_of_stage: Callable[[int], Optional[str]]
) -> Dict[str, Tuple[Stacks, float]]:
    """Per kind of segment, the stacks of all its segments and the CPU seconds one sample
    stands for (every segment of a run samples at one interval)."""
    out: Dict[str, Tuple[Stacks, float]] = {}
    for segment in segments:
        kind = segment_kind(segment, kind_of_stage)
        stacks, _ = out.get(kind, (Counter(), segment.seconds_per_sample))
        stacks.update(segment.stacks)
        out[kind] = (stacks, segment.seconds_per_sample)
    return out
