"""pyspark-shuffle: an adaptive, skew-aware Spark shuffle manager, packaged for PySpark.

>>> from pyspark.sql import SparkSession
>>> import pyspark_shuffle
>>> spark = pyspark_shuffle.configure(SparkSession.builder, in_flight_increment="8m").getOrCreate()

Importing this package does not import pyspark; :func:`configure` does when it is called.

- :func:`metrics`: the plugin's fetch counters of a running application.
- :class:`DummyRDD`, :func:`python_dummy_rdd`, :func:`skewed_fact`, :func:`skewed_dimension`:
  skewed workloads (:mod:`pyspark_shuffle.dummy`, loaded on first use; numpy and msgpack come
  with the ``dummy`` extra).
"""

from __future__ import annotations

from ._configure import configure
from ._jars import JarError, JarNotFoundError, SparkVersionMismatchError, jar_path, jar_paths
from ._metrics import metrics

#: Names served lazily from :mod:`pyspark_shuffle.dummy`, so importing the package stays light.
_DUMMY_EXPORTS = ("DummyRDD", "python_dummy_rdd", "skewed_dimension", "skewed_fact")

__version__ = "0.1.0"

__all__ = [
    "DummyRDD",
    "JarError",
    "JarNotFoundError",
    "SparkVersionMismatchError",
    "__version__",
    "configure",
    "jar_path",
    "jar_paths",
    "metrics",
    "python_dummy_rdd",
    "skewed_dimension",
    "skewed_fact",
]


def __getattr__(name: str):
    if name in _DUMMY_EXPORTS:
        from . import dummy

        return getattr(dummy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_DUMMY_EXPORTS))
