"""The DummyRDD generated in the JVM, on the executors, through the Python facade."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple

from ..values import INT_MAX, format_size, named, whole_number_between
from .spec import DummySpec

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def _row_to_pair(row: Any) -> Tuple[int, bytes]:
    return int(row[0]), bytes(row[1])


class DummyRDD:
    """A DummyRDD generated in the JVM (``org...dummy.DummyRDD``, through the Python facade).

    ``DummyRDD(spark, size="1g", skew=2.0, partition_size="32m", seed=0, compressible=False)``
    (the shape :meth:`DummySpec.of` takes, or ``DummyRDD(spark, spec)``): sizes are int bytes or
    Spark size strings; ``skew`` is the Zipf exponent alpha (>= 0); payloads are random bytes
    unless ``compressible``. Arguments are validated here, before the
    JVM is touched; ``spark`` (a SparkSession) is used only by :meth:`run`, :meth:`to_df` and
    :meth:`to_rdd`, so a plan (``num_partitions``, expected bytes) needs no session.
    Partition i's draws and bytes depend on (seed, i) only: the same seed gives the same data.
    """

    def __init__(self, spark: Any, spec: Optional[DummySpec] = None, **shape: Any) -> None:
        self.spec = spec or DummySpec.of(**shape)
        self.spark = spark

    def __repr__(self) -> str:
        s = self.spec
        return (
            f"DummyRDD(size={format_size(s.total_bytes)!r}, skew={s.skew}, "
            f"partition_size={format_size(s.partition_bytes)!r}, seed={s.seed}, "
            f"compressible={s.compressible})"
        )

    @property
    def num_partitions(self) -> int:
        return self.spec.num_partitions

    @property
    def size(self) -> int:
        return self.spec.total_bytes

    def expected_bytes_per_destination(self) -> "np.ndarray":
        """Expected bytes per destination from the weights (numpy array, sums to size)."""
        return self.spec.expected_bytes_per_destination()

    def _session(self) -> Any:
        if self.spark is None:
            raise ValueError("this DummyRDD has no SparkSession: pass one to run it")
        return self.spark

    def run(self, pin_executors: int = 0, hot_executor: int = 1) -> Dict[str, Any]:
        """Shuffle every chunk to its drawn destination (in the JVM).

        With ``pin_executors`` > 0 the tasks are pinned so that every shuffle manager moves the
        same bytes over the same links: map partition i on executor i mod n, reduce partition r
        (0 is the hottest destination) on executor (hot_executor - 1 + r) mod n, of the
        ``pin_executors`` executors ordered by host address and id (waited for); set a long
        ``spark.locality.wait`` so that tasks wait for their executor. Reports::

        {"num_partitions": n, "destination_bytes": [bytes received by destination 0..n-1],
         "destination_chunks": [chunks received ...],
         "destination_executors": [id of the executor that received each], "wall_s": seconds of the job,
         "size": S, "partition_size": P, "skew": alpha, "seed": seed,
         "compressible": bool}
        """
        from .._jvm import java_spark_context, python_api

        spark = self._session()
        pin_executors = named("pin_executors", pin_executors, whole_number_between, 0, INT_MAX)
        hot_executor = named("hot_executor", hot_executor, whole_number_between, 1, max(1, pin_executors))
        raw = python_api(spark).runDummyShuffle(
            java_spark_context(spark), *self.spec.jvm_args(), pin_executors, hot_executor
        )
        result = json.loads(str(raw))
        result.update(
            size=self.spec.total_bytes,
            partition_size=self.spec.partition_bytes,
            skew=self.spec.skew,
            seed=self.spec.seed,
            compressible=self.spec.compressible,
        )
        return result

    def to_df(self) -> Any:
        """The chunks before the shuffle, as a DataFrame ``destination INT, payload BINARY``
        (generated in the JVM, one partition per DummyRDD partition)."""
        from pyspark.sql import DataFrame

        from .._jvm import java_spark_session, python_api

        spark = self._session()
        jdf = python_api(spark).dummyFrame(java_spark_session(spark), *self.spec.jvm_args())
        return DataFrame(jdf, spark)

    def to_rdd(self) -> Any:
        """The chunks as a PySpark RDD of ``(destination, payload bytes)``."""
        return self.to_df().rdd.map(_row_to_pair)
