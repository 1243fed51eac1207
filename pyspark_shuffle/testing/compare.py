"""A/B runs: the same workloads under Spark's sort shuffle and under the plugin, same results.

    ab = ShuffleComparison(conf={"spark.reducer.maxSizeInFlight": "1m"})

    @ab.workload(unordered=True)
    def word_counts(spark):
        return spark.sparkContext.parallelize(words).map(lambda w: (w, 1)).reduceByKey(add).collect()

    def test_word_counts():
        ab.assert_same("word_counts")

Every side runs in a fresh Python process with its own driver JVM (a shuffle manager cannot be
swapped in a running SparkContext, and the process running the tests may hold a session of its
own): first all workloads under the sort shuffle, that session stopped, then all of them under
the plugin. A module of tests thus pays two session starts, on the first result it asks for.
Workload functions must be importable by the child (module-level functions of an imported
module, or ``__main__``'s), take the SparkSession and return a picklable value.
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from .. import spark_logs
from .._child_process import run_module
from ..sessions import PLUGIN, SORT, resolve_master

Workload = Callable[[Any], Any]
DEFAULT_TIMEOUT_SECONDS = 900.0


class WorkloadError(AssertionError):
    """A workload raised under one of the shuffle managers."""


@dataclass
class SideResult:
    """Outcome of one side (one manager) of an A/B run."""

    manager: str
    manager_class: str
    seconds: float
    results: Dict[str, dict] = field(default_factory=dict)
    #: ``pyspark_shuffle.metrics(spark)`` after the side's last workload (empty counters under
    #: the sort shuffle).
    metrics: Dict[str, Any] = field(default_factory=dict)
    #: Where its driver and executors logged (watched: the test that ran it reads them).
    logs: Optional[spark_logs.ApplicationLogs] = None

    def log_findings(self) -> List[spark_logs.Finding]:
        """What its driver's and executors' logs hold (:mod:`pyspark_shuffle.spark_logs`)."""
        return self.logs.findings() if self.logs else []

    def value(self, name: str) -> Any:
        entry = self.results[name]
        if not entry["ok"]:
            raise WorkloadError(
                f"workload {name!r} failed under the {self.manager} shuffle "
                f"({self.manager_class}): {entry['error']}\n{entry['traceback']}"
            )
        return entry["value"]


def freeze(value: Any) -> Any:
    """A hashable, comparable stand-in for ``value``: lists and tuples (and Rows) -> tuples,
    dicts -> sorted item tuples, sets -> sorted tuples, pandas frames -> (columns, rows)."""
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted(((freeze(k), freeze(v)) for k, v in value.items()), key=repr))
    if isinstance(value, (set, frozenset)):
        return tuple(sorted((freeze(v) for v in value), key=repr))
    if type(value).__name__ == "DataFrame" and hasattr(value, "itertuples"):
        return (tuple(value.columns), tuple(freeze(tuple(r)) for r in value.itertuples(index=False)))
    return value


def _items(value: Any) -> list:
    frozen = freeze(value)
    if type(value).__name__ == "DataFrame" and hasattr(value, "itertuples"):
        return list(frozen[1])
    if not isinstance(frozen, tuple):
        raise TypeError(f"unordered comparison needs a collection, got {type(value).__name__}")
    return list(frozen)


def difference(expected: Any, actual: Any, unordered: bool = False) -> Optional[str]:
    """None when equal, else a short description of how ``actual`` differs from ``expected``.
    With ``unordered`` the top-level items are compared as multisets."""
    if unordered:
        want, got = collections.Counter(_items(expected)), collections.Counter(_items(actual))
        if want == got:
            return None
        missing, extra = list((want - got).elements()), list((got - want).elements())
        return (
            f"{sum(want.values())} vs {sum(got.values())} items; "
            f"{len(missing)} missing (e.g. {missing[:3]!r}), {len(extra)} unexpected (e.g. {extra[:3]!r})"
        )
    a, b = freeze(expected), freeze(actual)
    if a == b:
        return None
    if isinstance(a, tuple) and isinstance(b, tuple):
        for index, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"first difference at index {index}: {x!r} != {y!r} (lengths {len(a)}, {len(b)})"
        return f"lengths differ: {len(a)} != {len(b)}"
    return f"{a!r} != {b!r}"


@dataclass
class ComparisonResult:
    sort: SideResult
    plugins: Dict[str, SideResult]  # variant name -> side
    unordered: Dict[str, bool]

    def assert_same(self, name: str) -> Any:
        """The plugin's result of workload ``name`` after asserting that every variant's equals
        the sort shuffle's (so any variant's result is the one returned)."""
        if name not in self.unordered:
            raise KeyError(f"no workload {name!r}; known: {sorted(self.unordered)}")
        expected = self.sort.value(name)
        actual = None
        for variant, side in self.plugins.items():
            actual = side.value(name)
            diff = difference(expected, actual, self.unordered[name])
            if diff is not None:
                raise AssertionError(
                    f"workload {name!r}: the plugin ({side.manager_class}, variant {variant!r}) "
                    f"returned another result than the sort shuffle ({self.sort.manager_class}): {diff}"
                )
        return actual


class ShuffleComparison:
    """Workloads to run A/B under the sort shuffle and the plugin, with one shared ``conf``
    (plus ``PYSPARK_SHUFFLE_TEST_CONF``) and the plugin ``options`` of ``configure()``.

    ``variants`` (name -> options) runs the plugin once per option set instead, e.g. once per
    fetch order; every variant must return the sort shuffle's results. ``variant_conf`` (name ->
    Spark conf) adds Spark settings to one variant's session, e.g. to turn a Spark feature off."""

    def __init__(
        self,
        conf: Optional[Mapping[str, Any]] = None,
        options: Optional[Mapping[str, Any]] = None,
        master: Optional[str] = None,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        variants: Optional[Mapping[str, Mapping[str, Any]]] = None,
        variant_conf: Optional[Mapping[str, Mapping[str, Any]]] = None,
    ) -> None:
        if options is not None and variants is not None:
            raise ValueError("give either options or variants, not both")
        self.conf = {k: str(v) for k, v in (conf or {}).items()}
        self.variants = {name: dict(o) for name, o in (variants or {"plugin": options or {}}).items()}
        unknown = sorted(set(variant_conf or {}) - set(self.variants))
        if unknown:
            raise ValueError(f"variant_conf names unknown variants {unknown}; known: {sorted(self.variants)}")
        self.variant_conf = {
            name: {k: str(v) for k, v in c.items()} for name, c in (variant_conf or {}).items()
        }
        self.master = master
        self.timeout = timeout
        self._workloads: List[tuple] = []
        self._unordered: Dict[str, bool] = {}
        self._result: Optional[ComparisonResult] = None

    def workload(
        self, function: Optional[Workload] = None, *, name: Optional[str] = None, unordered: bool = False
    ):
        """Register ``function(spark) -> result`` (usable as ``@ab.workload`` or
        ``@ab.workload(unordered=True)``); ``unordered`` compares the result's items as a multiset."""

        def register(f: Workload) -> Workload:
            key = name or f.__name__
            if key in self._unordered:
                raise ValueError(f"workload {key!r} is registered twice")
            if self._result is not None:
                raise RuntimeError(f"cannot add workload {key!r}: the comparison already ran")
            self._workloads.append((key, f))
            self._unordered[key] = unordered
            return f

        return register(function) if function is not None else register

    def extend(
        self, other: "ShuffleComparison", prefix: str = "", names: Optional[Sequence[str]] = None
    ) -> None:
        """Register the workloads of ``other`` here too (``names`` of them, else every one),
        named ``prefix + name`` (e.g. to run several suites on another master)."""
        unknown = sorted(set(names or ()) - set(other._unordered))
        if unknown:
            raise ValueError(f"no workloads {unknown} to extend with; known: {sorted(other._unordered)}")
        for name, function in other._workloads:
            if names is None or name in names:
                self.workload(function, name=prefix + name, unordered=other._unordered[name])

    @property
    def names(self) -> Sequence[str]:
        return [name for name, _ in self._workloads]

    def run(self) -> ComparisonResult:
        """Run every workload under both managers (once; later calls return the same result)."""
        if self._result is None:
            if not self._workloads:
                raise ValueError("no workloads registered")
            sort = self._run_side(SORT, {}, {})
            plugins = {
                name: self._run_side(PLUGIN, options, self.variant_conf.get(name, {}))
                for name, options in self.variants.items()
            }
            self._result = ComparisonResult(sort, plugins, dict(self._unordered))
        return self._result

    def assert_same(self, name: str) -> Any:
        return self.run().assert_same(name)

    def _run_side(self, manager: str, options: Mapping[str, Any], conf: Mapping[str, str]) -> SideResult:
        import pickle

        from pyspark import cloudpickle

        job = {
            "manager": manager,
            "conf": {**self.conf, **conf},
            "options": dict(options),
            "master": self.master or resolve_master(),
            "workloads": list(self._workloads),
        }
        with tempfile.TemporaryDirectory(prefix="pyspark-shuffle-ab-") as tmp:
            in_path, out_path = os.path.join(tmp, "job.pickle"), os.path.join(tmp, "out.pickle")
            with open(in_path, "wb") as handle:
                cloudpickle.dump(job, handle)
            child = run_module("pyspark_shuffle.testing._worker", [in_path, out_path], self.timeout)
            seconds = child.seconds
            sys.stderr.write(f"--- {manager} side output ---\n{child.output}")
            if child.timed_out:
                raise RuntimeError(
                    f"the {manager} side of the A/B run did not finish within {self.timeout:.0f} s:\n"
                    f"{child.tail()}"
                )
            if child.returncode != 0 or not os.path.exists(out_path):
                raise RuntimeError(
                    f"the {manager} side of the A/B run exited with code {child.returncode}:\n{child.tail()}"
                )
            with open(out_path, "rb") as handle:
                outcomes = pickle.load(handle)
        logs = spark_logs.ApplicationLogs.from_dict(outcomes["logs"])
        spark_logs.WATCH.add(logs)
        return SideResult(
            manager, outcomes["manager_class"], seconds, outcomes["results"], outcomes["metrics"], logs
        )


def compare_shuffle_managers(
    *workloads: Workload,
    conf: Optional[Mapping[str, Any]] = None,
    options: Optional[Mapping[str, Any]] = None,
    unordered: bool = False,
) -> Dict[str, Any]:
    """Run ``workloads`` A/B, assert equal results, return ``{name: plugin result}``."""
    comparison = ShuffleComparison(conf=conf, options=options)
    for function in workloads:
        comparison.workload(function, unordered=unordered)
    result = comparison.run()
    return {name: result.assert_same(name) for name in comparison.names}
