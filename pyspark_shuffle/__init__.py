"""pyspark-shuffle: an adaptive, skew-aware Spark shuffle manager, packaged for PySpark.

>>> from pyspark.sql import SparkSession
>>> import pyspark_shuffle
>>> spark = pyspark_shuffle.configure(SparkSession.builder, in_flight_increment="8m").getOrCreate()

Importing this package does not import pyspark; :func:`configure` does when it is called.

- :func:`metrics`: the plugin's fetch counters of a running application; :func:`metrics_frame`
  and :func:`bench_frame` (bench results) as pandas DataFrames with pyarrow-backed columns.
- :func:`skew_report`: per shuffle, partition sizes with their Zipf fit, bytes and waits per
  source, the in-flight limit over the stage (:mod:`pyspark_shuffle.report`).
- :class:`DummyRDD`, :func:`python_dummy_rdd`, :func:`python_dummy_df`, :func:`skewed_fact`,
  :func:`skewed_dimension`: skewed workloads (:mod:`pyspark_shuffle.dummy`; numpy, msgpack and
  pyarrow come with the ``dummy`` extra).

Everything but :func:`configure`, :func:`metrics` and the jar helpers loads on first use.
"""

from __future__ import annotations

from ._configure import configure
from ._jars import JarError, JarNotFoundError, SparkVersionMismatchError, jar_path, jar_paths
from ._metrics import metrics

#: Names served lazily from their modules, so importing the package stays light.
_LAZY_EXPORTS = {
    "DummyRDD": "dummy",
    "python_dummy_df": "dummy",
    "python_dummy_rdd": "dummy",
    "skewed_dimension": "dummy",
    "skewed_fact": "dummy",
    "metrics_frame": "frames",
    "bench_frame": "frames",
    "skew_report": "report",
}

__version__ = "0.1.0"

__all__ = [
    "DummyRDD",
    "JarError",
    "JarNotFoundError",
    "SparkVersionMismatchError",
    "__version__",
    "bench_frame",
    "configure",
    "jar_path",
    "jar_paths",
    "metrics",
    "metrics_frame",
    "python_dummy_df",
    "python_dummy_rdd",
    "skewed_dimension",
    "skewed_fact",
    "skew_report",
]


def __getattr__(name: str):
    if name in _LAZY_EXPORTS:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_EXPORTS))
