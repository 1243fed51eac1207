"""What each executor held over a span of a run, from the series the ``spark.plugins`` probe
samples every 50 ms into 250 ms buckets (each keeps its largest sample and its mean): the peak
and the time-weighted mean of the heap live after collections, of direct memory, of Netty's pool,
of the bytes buffered where fetched blocks arrive, of RSS and of mode=push's merge store. Means
are what a run holds; peaks are where a collector's saw-tooth, or one moment, put them."""

from typing import Any, Dict, Optional, Sequence, Tuple

#: The probe's fields, by the name the run record gives them.
FIELDS = {
    "live_heap": "live_heap_bytes",
    "direct": "direct_bytes",
    "netty_pooled": "netty_pooled_bytes",
    "buffered": "buffered_bytes",
    "rss": "rss_bytes",
    "store": "store_bytes",
}


def over_span(series: Dict[str, Any], span: Optional[Sequence[float]]) -> Dict[str, Optional[int]]:
    """One executor's ``{name}_peak_bytes`` and ``{name}_mean_bytes`` for each of :data:`FIELDS`
    over ``span`` (epoch seconds, start and end; the whole series without one). A bucket counts
    for the part of it the span covers; None where no bucket falls in the span."""
    starts = series.get("start_ms") or []
    bucket_ms = int(series.get("bucket_ms") or 0)
    weights = [_overlap_ms(start, bucket_ms, span) for start in starts]
    figures: Dict[str, Optional[int]] = {}
    for name, field in FIELDS.items():
        values = series.get(field) or {}
        maxes, means = values.get("max") or [], values.get("mean") or []
        counted = [(w, hi, mean) for w, hi, mean in zip(weights, maxes, means) if w > 0]
        total = sum(w for w, _, _ in counted)
        figures[f"{name}_peak_bytes"] = max((hi for _, hi, _ in counted), default=None)
        figures[f"{name}_mean_bytes"] = round(sum(w * m for w, _, m in counted) / total) if total else None
    return figures


def _overlap_ms(start_ms: int, bucket_ms: int, span: Optional[Sequence[float]]) -> float:
    if span is None:
        return float(bucket_ms)
    lo, hi = span[0] * 1000.0, span[1] * 1000.0
    return max(0.0, min(start_ms + bucket_ms, hi) - max(start_ms, lo))


def within(series: Dict[str, Any], span: Tuple[float, float]) -> Dict[str, Any]:
    """The buckets of one executor's series that overlap ``span`` (epoch seconds): what a run
    record keeps to plot."""
    bucket_ms = int(series.get("bucket_ms") or 0)
    keep = [
        i for i, start in enumerate(series.get("start_ms") or []) if _overlap_ms(start, bucket_ms, span) > 0
    ]
    kept: Dict[str, Any] = {
        "bucket_ms": series.get("bucket_ms"),
        "start_ms": [series["start_ms"][i] for i in keep],
    }
    for field in FIELDS.values():
        values = series.get(field) or {}
        kept[field] = {kind: [values[kind][i] for i in keep] for kind in ("max", "mean") if kind in values}
    return kept
