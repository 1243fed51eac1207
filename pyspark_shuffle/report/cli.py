"""``python -m pyspark_shuffle report PATH``: the skew report of a bench JSON or an event log."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from ..bench_run import runs_of
from .data import ShuffleView, from_bench, from_event_log
from .figure import PlotUnavailable, format_table, require_matplotlib, write


def load(path: Path) -> List[ShuffleView]:
    """The shuffle reads of a bench JSON (an object with ``runs``) or of an event log."""
    if path.is_file():
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        if first.lstrip().startswith("{") and '"Event"' not in first:
            with path.open(encoding="utf-8") as handle:
                data = json.load(handle)
            if isinstance(data, dict) and "runs" in data:
                return from_bench(runs_of(data))
    return from_event_log(path)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pyspark_shuffle report",
        description="The skew report of every shuffle read in a bench JSON or a Spark event log: a "
        "table, and one PNG per shuffle (partition sizes with their Zipf fit, bytes and fetch wait "
        "per source executor, the in-flight limit over the reduce stage, merged and file bytes).",
    )
    parser.add_argument("path", type=Path, help="a bench JSON, an event log file or a spark.eventLog.dir")
    parser.add_argument(
        "--out", default="skew-report", metavar="DIR", help="where the PNGs go (default skew-report)"
    )
    parser.add_argument("--no-plot", action="store_true", help="print the table only")
    args = parser.parse_args(argv)
    try:
        if not args.no_plot:
            require_matplotlib()
        views = load(args.path)
    except (OSError, ValueError, PlotUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not views:
        print(f"no shuffle reads found in {args.path}")
        return 1
    print(format_table(views))
    if not args.no_plot:
        for path in write(views, args.out):
            print(f"wrote {path}")
    return 0
