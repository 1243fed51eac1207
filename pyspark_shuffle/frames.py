"""The plugin's counters and bench results as pandas DataFrames with pyarrow-backed columns
(``pd.ArrowDtype``): built as Arrow tables, so numbers keep their types (no float NaN for a
missing int) and the frames convert to Arrow or Spark without copies of Python objects.
Needs pandas and pyarrow (the ``test`` extra has both; pyspark's own ``sql`` extra too)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Union

from .bench_run import RUN_NUMBERS, BenchRun, read_runs

#: Bench run fields that are one number or label each, in this order before the flattened rest:
#: what identifies the run, then its numbers.
RUN_COLUMNS = ("index", "repeat", "workload", "skew", "manager", "status", *RUN_NUMBERS)


def flatten(values: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Nested dicts as one level with dotted keys: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``."""
    flat: Dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _frame(rows: List[Dict[str, Any]], first: Iterable[str] = ()) -> Any:
    import pandas as pd
    import pyarrow as pa

    columns = list(dict.fromkeys([*first, *(key for row in rows for key in row)]))
    table = pa.table({name: pa.array([row.get(name) for row in rows]) for name in columns})
    return table.to_pandas(types_mapper=pd.ArrowDtype)


def counters_frame(metrics: Mapping[str, Any]) -> Any:
    """``metrics(spark)``'s counters as a DataFrame: a row ``scope="application"`` and one per
    executor id, the map-valued counters flattened (``bytes_by_source.1``)."""
    rows = [{"scope": "application", **flatten(metrics.get("application") or {})}]
    executors = metrics.get("executors") or {}
    rows += [{"scope": executor, **flatten(executors[executor])} for executor in sorted(executors)]
    return _frame(rows, ["scope"])


def metrics_frame(spark: Any) -> Any:
    """:func:`counters_frame` of the running session ``spark``'s plugin counters."""
    from ._metrics import metrics

    return counters_frame(metrics(spark))


def bench_frame(runs: Union[str, Path, Iterable[Union[BenchRun, Mapping[str, Any]]]]) -> Any:
    """A bench JSON's runs (its path, or its runs: :class:`~pyspark_shuffle.bench_run.BenchRun`
    records or their JSON) as a DataFrame, one row per run: the run's own numbers first, then its
    plugin counters (``plugin.*``) flattened; the per-link bytes and per-shuffle reports are left
    out."""
    if isinstance(runs, (str, Path)):
        runs = read_runs(runs)
    rows = []
    for run in runs:
        record = run if isinstance(run, BenchRun) else BenchRun.from_json(run)
        row = {name: getattr(record, name) for name in RUN_COLUMNS}
        row.update(flatten(record.plugin, "plugin."))
        rows.append(row)
    return _frame(rows, RUN_COLUMNS)
