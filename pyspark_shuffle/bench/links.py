"""Bytes over each worker's link of a namespace cluster, and when they crossed it.

The host end of worker i's veth pair counts what the worker received (``tx_bytes``: "down") and
sent (``rx_bytes``: "up"); the driver's process reads those counters from ``/sys/class/net``
(no privileges needed) every :data:`INTERVAL_S` while the workload runs. :func:`usage` then splits
the bytes by the map and reduce stages' wall-clock spans and divides by span x rate: how busy
each link was while maps ran (what shuffle-on-write could use) and while reducers fetched.
"""

from __future__ import annotations

import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

INTERVAL_S = 0.1
Sample = Tuple[float, Dict[str, Tuple[int, int]]]  # epoch seconds, worker -> (down, up) bytes


def read_counters(links: Dict[str, str], root: str = "/sys/class/net") -> Dict[str, Tuple[int, int]]:
    counters = {}
    for worker, device in links.items():
        with (
            open(f"{root}/{device}/statistics/tx_bytes") as tx,
            open(f"{root}/{device}/statistics/rx_bytes") as rx,
        ):
            counters[worker] = (int(tx.read()), int(rx.read()))
    return counters


class LinkSampler:
    """Samples the counters of ``links`` (worker -> host-side device) in a daemon thread."""

    def __init__(self, links: Dict[str, str], interval_s: float = INTERVAL_S) -> None:
        self.links = dict(links)
        self.interval_s = interval_s
        self.samples: List[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="link-sampler", daemon=True)

    def __enter__(self) -> "LinkSampler":
        self.samples.append((time.time(), read_counters(self.links)))
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.samples.append((time.time(), read_counters(self.links)))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.samples.append((time.time(), read_counters(self.links)))


def _at(samples: Sequence[Sample], when: float, worker: str) -> Tuple[float, float]:
    """Counters of ``worker`` at ``when``, interpolated linearly between the samples around it."""
    if when <= samples[0][0]:
        return samples[0][1][worker]
    for (t0, c0), (t1, c1) in zip(samples, samples[1:]):
        if t0 <= when <= t1:
            f = 0.0 if t1 == t0 else (when - t0) / (t1 - t0)
            return tuple(a + f * (b - a) for a, b in zip(c0[worker], c1[worker]))  # type: ignore[return-value]
    return samples[-1][1][worker]


def usage(
    samples: Sequence[Sample], rates_bps: Dict[str, int], spans: Dict[str, Optional[Tuple[float, float]]]
) -> Dict[str, Dict[str, Dict[str, float]]]:
    """Per worker, per span name (e.g. "map", "reduce", "workload"): bytes down and up in the
    span and utilisation = bits / (span seconds x link rate)."""
    result: Dict[str, Dict[str, Dict[str, float]]] = {}
    if len(samples) < 2:
        return result
    for worker, rate in rates_bps.items():
        result[worker] = {"rate_bps": rate}  # type: ignore[dict-item]
        for name, span in spans.items():
            if span is None:
                continue
            start, end = span
            (d0, u0), (d1, u1) = _at(samples, start, worker), _at(samples, end, worker)
            seconds = max(end - start, 1e-9)
            result[worker][name] = {
                "seconds": round(seconds, 3),
                "down_bytes": int(d1 - d0),
                "up_bytes": int(u1 - u0),
                "down_util": round((d1 - d0) * 8 / (seconds * rate), 4),
                "up_util": round((u1 - u0) * 8 / (seconds * rate), 4),
            }
    return result


def run_figures(links: Dict[str, Dict[str, object]]) -> Dict[str, Optional[float]]:
    """A run's link figures in one line: bytes all links carried to their workers during the map
    stage and the reduce stage, the reduce stage's mean and largest down-link utilisation, and
    its link bound: the longest any one link needs to carry what it carried during the reduce
    stage, in either direction, at its rate (no reduce stage can be shorter on that placement)."""
    figures: Dict[str, Optional[float]] = {
        "link_map_bytes": None,
        "link_reduce_bytes": None,
        "reduce_util_mean": None,
        "reduce_util_max": None,
        "reduce_bound_s": None,
        "job_link_s": None,
    }
    if not links:
        return figures
    for phase in ("map", "reduce"):
        spans = [w[phase] for w in links.values() if isinstance(w.get(phase), dict)]
        if spans:
            figures[f"link_{phase}_bytes"] = float(sum(s["down_bytes"] for s in spans))  # type: ignore[index]
    utils = [w["reduce"]["down_util"] for w in links.values() if isinstance(w.get("reduce"), dict)]  # type: ignore[index]
    if utils:
        figures["reduce_util_mean"] = sum(utils) / len(utils)
        figures["reduce_util_max"] = max(utils)
    carried = [
        max(w["reduce"]["down_bytes"], w["reduce"]["up_bytes"]) * 8 / w["rate_bps"]  # type: ignore[index, operator]
        for w in links.values()
        if isinstance(w.get("reduce"), dict)
    ]
    if carried:
        figures["reduce_bound_s"] = max(carried)
    whole = [_job_link_s(w) for w in links.values()]
    if any(s is not None for s in whole):
        figures["job_link_s"] = max(s for s in whole if s is not None)
    return figures


def _job_link_s(worker: Dict[str, object]) -> Optional[float]:
    """How long one worker's link needs, at its rate, for what it carried over the map and the
    reduce stage together, in the direction that carried more."""
    spans = [worker[phase] for phase in ("map", "reduce") if isinstance(worker.get(phase), dict)]
    if not spans:
        return None
    down = sum(s["down_bytes"] for s in spans)  # type: ignore[index]
    up = sum(s["up_bytes"] for s in spans)  # type: ignore[index]
    return max(down, up) * 8 / worker["rate_bps"]  # type: ignore[operator]


def job_bound_s(
    job_link_s: Optional[float], map_task_s: Optional[float], map_tasks: Optional[int]
) -> Optional[float]:
    """A run's link bound as a job: the most one link carried over both stages at its rate, plus
    one map task's mean run time, which no manager overlaps with sending (a map output crosses
    only once it is written). None without link figures."""
    if job_link_s is None:
        return None
    return job_link_s + (map_task_s / map_tasks if map_task_s and map_tasks else 0.0)
