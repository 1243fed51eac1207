"""Skewed fact and dimension DataFrames, and keyed rows for aggregations, generated in the JVM."""

from __future__ import annotations

import json
from typing import Any, Dict

from ..values import INT_MAX, LONG_MAX, named, whole_number_between, zipf_exponent


def skewed_fact(
    spark: Any,
    rows: Any,
    keys: Any,
    skew: Any,
    payload_bytes: Any = 100,
    partitions: Any = 8,
    seed: Any = 0,
) -> Any:
    """A fact DataFrame ``id BIGINT, key BIGINT, payload BINARY`` generated in the JVM: ``rows``
    rows (ids 0..rows-1) whose ``key`` follows Zipf(``skew``) over 0..keys-1 (key 0 the most
    frequent, w(k) = 1 / (k + 1) ** skew), each with ``payload_bytes`` random bytes, in
    ``partitions`` partitions. The same seed gives the same table."""
    rows = named("rows", rows, whole_number_between, 0, LONG_MAX)
    keys = named("keys", keys, whole_number_between, 1, INT_MAX)
    skew = named("skew", skew, zipf_exponent)
    payload_bytes = named("payload_bytes", payload_bytes, whole_number_between, 0, INT_MAX)
    partitions = named("partitions", partitions, whole_number_between, 1, INT_MAX)
    seed = named("seed", seed, whole_number_between, 0, LONG_MAX)
    from pyspark.sql import DataFrame

    from .._jvm import java_spark_session, python_api

    jdf = python_api(spark).skewedFact(
        java_spark_session(spark), rows, keys, skew, payload_bytes, partitions, seed
    )
    return DataFrame(jdf, spark)


def skewed_dimension(spark: Any, keys: Any, partitions: Any = 2) -> Any:
    """The dimension of :func:`skewed_fact`: one row per key 0..keys-1, ``key BIGINT, name
    STRING`` (``name`` = "key-<key>"), in ``partitions`` partitions (generated in the JVM)."""
    keys = named("keys", keys, whole_number_between, 1, INT_MAX)
    partitions = named("partitions", partitions, whole_number_between, 1, INT_MAX)
    from pyspark.sql import DataFrame

    from .._jvm import java_spark_session, python_api

    jdf = python_api(spark).skewedDimension(java_spark_session(spark), keys, partitions)
    return DataFrame(jdf, spark)


def keyed_rows(spark: Any, rows: Any, keys: Any, partitions: Any = 8, seed: Any = 0) -> Any:
    """``key BIGINT, value BIGINT`` for aggregations, generated in the JVM: ``rows`` rows (value
    0..rows-1) in ``partitions`` partitions, row i's key ``(i * 1000003 + seed) mod keys``: every
    key in every partition while a partition has more rows than there are keys, every key
    distinct while there are at least as many keys as rows."""
    rows = named("rows", rows, whole_number_between, 0, LONG_MAX)
    keys = named("keys", keys, whole_number_between, 1, LONG_MAX)
    partitions = named("partitions", partitions, whole_number_between, 1, INT_MAX)
    seed = named("seed", seed, whole_number_between, 0, LONG_MAX)
    from pyspark.sql import DataFrame

    from .._jvm import java_spark_session, python_api

    jdf = python_api(spark).keyedRows(java_spark_session(spark), rows, keys, partitions, seed)
    return DataFrame(jdf, spark)


def keyed_sums(
    spark: Any, rows: Any, keys: Any, partitions: Any = 8, reducers: Any = 8, seed: Any = 0
) -> Dict[str, int]:
    """The rows of :func:`keyed_rows` as a JVM RDD of ``(key, value)`` summed with
    ``reduceByKey`` into ``reducers`` partitions (an RDD shuffle with map-side combine, which a
    PySpark RDD's ``reduceByKey`` is not: it combines in Python): ``{"keys": distinct keys,
    "checksum": sum of key * sum mod 2**64}``."""
    rows = named("rows", rows, whole_number_between, 0, LONG_MAX)
    keys = named("keys", keys, whole_number_between, 1, LONG_MAX)
    partitions = named("partitions", partitions, whole_number_between, 1, INT_MAX)
    reducers = named("reducers", reducers, whole_number_between, 1, INT_MAX)
    seed = named("seed", seed, whole_number_between, 0, LONG_MAX)
    from .._jvm import java_spark_context, python_api

    raw = python_api(spark).keyedSumsJson(java_spark_context(spark), rows, keys, partitions, reducers, seed)
    return {k: int(v) for k, v in json.loads(str(raw)).items()}
