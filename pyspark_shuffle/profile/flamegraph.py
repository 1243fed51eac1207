"""Flame graphs of sampled stacks as one self-contained HTML page (inline SVG, no script): each
row a kind of stage, each column a shuffle manager, every graph on one scale (CPU seconds), so
a manager that spends more is wider. Frames are coloured by the phase their own name belongs
to (see :mod:`.phases`); hovering one shows its name, CPU seconds and share."""

from __future__ import annotations

import hashlib
import html
import re
from typing import Dict, List, Sequence, Tuple

from .phases import FRAME_RULES, TASK_THREAD
from .segments import Stacks

WIDTH = 900
FRAME_HEIGHT = 16
MIN_WIDTH_PX = 0.3

PHASE_COLOURS = {
    "compress": "#e377c2",
    "decompress": "#f7b6d2",
    "checksum": "#bcbd22",
    "serialize": "#9467bd",
    "deserialize": "#c5b0d5",
    "keep/fold": "#2ca02c",
    "push send": "#98df8a",
    "owner merge": "#17becf",
    "write": "#8c564b",
    "aggregate": "#1f77b4",
    "partition/sort": "#ff7f0e",
    "fetch": "#d62728",
    "python": "#7f7f7f",
}


class _Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.children: Dict[str, "_Node"] = {}


def thread_group(thread: str) -> str:
    """Threads of one pool as one root frame: task threads together, digits of others' names
    folded (``shuffle-server-3-1`` -> ``shuffle-server-#-#``)."""
    if thread.startswith(TASK_THREAD):
        return "task threads"
    return re.sub(r"\d+", "#", thread) or "(unnamed thread)"


def _tree(stacks: Stacks) -> _Node:
    root = _Node("all")
    for (thread, frames), count in stacks.items():
        node = root
        node.count += count
        for name in (thread_group(thread), *frames):
            node = node.children.setdefault(name, _Node(name))
            node.count += count
    return root


def _colour(name: str) -> str:
    for phase, pattern in FRAME_RULES:
        if phase in PHASE_COLOURS and pattern.search(name):
            return PHASE_COLOURS[phase]
    shade = int(hashlib.md5(name.encode()).hexdigest()[:2], 16)
    if name.startswith("org/apache/spark/shuffle/adaptive/"):
        return f"rgb(60,{150 + shade % 80},60)"
    if name.endswith("_[k]"):
        return f"rgb(200,{120 + shade % 60},{120 + shade % 60})"
    return f"rgb(230,{170 + shade % 60},{80 + shade % 50})"


def _svg(stacks: Stacks, seconds_per_sample: float, scale_samples: int) -> str:
    root = _tree(stacks)
    rects: List[str] = []
    depth_max = 0

    def draw(node: _Node, x: float, depth: int) -> None:
        nonlocal depth_max
        width = node.count / scale_samples * WIDTH if scale_samples else 0.0
        if width < MIN_WIDTH_PX:
            return
        depth_max = max(depth_max, depth)
        y = depth * FRAME_HEIGHT
        seconds = node.count * seconds_per_sample
        share = node.count / root.count * 100 if root.count else 0.0
        label = html.escape(node.name)
        rects.append(
            f"<g><title>{label} ({seconds:.2f} s CPU, {share:.1f}%)</title>"
            f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{FRAME_HEIGHT - 1}" '
            f'fill="{_colour(node.name)}"/>'
            + (
                f'<text x="{x + 2:.1f}" y="{y + FRAME_HEIGHT - 4}" font-size="11">'
                f"{html.escape(node.name[: int(width / 7)])}</text>"
                if width > 35
                else ""
            )
            + "</g>"
        )
        child_x = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            draw(child, child_x, depth + 1)
            child_x += child.count / scale_samples * WIDTH

    draw(root, 0.0, 0)
    height = (depth_max + 1) * FRAME_HEIGHT
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="monospace">{"".join(rects)}</svg>'
    )


def flamegraph_page(title: str, rows: Sequence[Tuple[str, Sequence[Tuple[str, Stacks, float]]]]) -> str:
    """The page: per row (a kind of stage), one graph per column ``(manager, stacks, CPU seconds a
    sample stands for)``, all of the row on the scale of its largest."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif} td{vertical-align:top;padding:4px}</style>",
        f"</head><body><h2>{html.escape(title)}</h2>",
        "<p>Icicle graphs (callers above callees), width = CPU seconds, one scale per row. "
        "Colours: "
        + ", ".join(
            f"<span style='background:{c}'>&nbsp;{html.escape(p)}&nbsp;</span>"
            for p, c in PHASE_COLOURS.items()
        )
        + "; green: the plugin's other frames.</p>",
    ]
    for kind, columns in rows:
        scale = max((sum(stacks.values()) for _, stacks, _ in columns), default=0)
        parts.append(f"<h3>{html.escape(kind)} stages</h3><table><tr>")
        for manager, stacks, seconds_per_sample in columns:
            seconds = sum(stacks.values()) * seconds_per_sample
            parts.append(
                f"<td><b>{html.escape(manager)}</b>: {seconds:.2f} s CPU<br>"
                + _svg(stacks, seconds_per_sample, scale)
                + "</td>"
            )
        parts.append("</tr></table>")
    parts.append("</body></html>")
    return "".join(parts)
