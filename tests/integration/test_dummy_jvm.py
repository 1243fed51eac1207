"""DummyRDD, the Python DummyRDD and the skewed tables on the plugin's local-cluster session."""

import functools
import hashlib
from collections import Counter

import pytest
from pyspark.sql import functions as F

from pyspark_shuffle import DummyRDD, python_dummy_df, python_dummy_rdd, skewed_dimension, skewed_fact
from pyspark_shuffle.dummy import DummySpec, generate_partition, unpack_chunk, zipf_probabilities
from pyspark_shuffle.testing.stats import assert_fits

pytestmark = pytest.mark.integration

SIZE = 3 << 20  # 3 MiB in 64 KiB partitions: n = 48, 2304 chunks of 1365 or 1366 bytes
PARTITION = 64 << 10
N = 48


@pytest.fixture(scope="module")
def spark(pyspark_shuffle_spark):
    return pyspark_shuffle_spark


def dummy(spark, skew, seed, compressible=False):
    return DummyRDD(
        spark, size=SIZE, skew=skew, partition_size=PARTITION, seed=seed, compressible=compressible
    )


@pytest.fixture(scope="module")
def run(spark):
    """DummyRDD(...).run() for (skew, seed), each run at most once per module."""

    @functools.lru_cache(maxsize=None)
    def run_once(skew, seed):
        return dummy(spark, skew, seed).run()

    return run_once


def frame_digest(df):
    """(digest of the rows in order as (destination, sha256 of payload), row count)."""
    from pyspark.sql import functions as F

    rows = df.select("destination", F.sha2("payload", 256)).collect()
    return hashlib.sha256(repr([tuple(r) for r in rows]).encode()).hexdigest(), len(rows)


@pytest.mark.parametrize("alpha", [0.0, 1.0, 2.0])
def test_run_follows_zipf(run, alpha):
    result = run(alpha, 5)
    assert result["num_partitions"] == N
    chunks, received = result["destination_chunks"], result["destination_bytes"]
    assert len(chunks) == len(received) == N
    assert sum(chunks) == N * N
    assert sum(received) == SIZE
    assert all(1365 * c <= b <= 1366 * c for c, b in zip(chunks, received))  # 65536 = 48 * 1365 + 16
    assert_fits(chunks, zipf_probabilities(N, alpha), what=f"JVM DummyRDD chunks (alpha {alpha})")
    assert result["wall_s"] > 0 and result["skew"] == alpha and result["size"] == SIZE


def test_same_seed_same_shuffle(spark, run):
    first = run(1.0, 5)
    repeated = dummy(spark, 1.0, 5).run()  # not cached: a second job
    assert repeated["destination_bytes"] == first["destination_bytes"]
    assert repeated["destination_chunks"] == first["destination_chunks"]
    other = run(1.0, 6)
    assert other["destination_bytes"] != first["destination_bytes"]
    assert sum(other["destination_bytes"]) == SIZE


def test_to_df_schema_rows_and_shuffle_agree(spark, run):
    from pyspark.sql import functions as F

    df = dummy(spark, 1.0, 5).to_df()
    assert df.schema.simpleString() == "struct<destination:int,payload:binary>"
    assert df.rdd.getNumPartitions() == N
    per_destination = {
        r["destination"]: (r["chunks"], r["bytes"])
        for r in df.groupBy("destination")
        .agg(F.count("*").alias("chunks"), F.sum(F.length("payload")).alias("bytes"))
        .collect()
    }
    assert sum(c for c, _ in per_destination.values()) == N * N
    assert sum(b for _, b in per_destination.values()) == SIZE
    # The shuffle delivered every chunk of the frame to its drawn destination.
    result = run(1.0, 5)
    for destination in range(N):
        chunks, received = per_destination.get(destination, (0, 0))
        assert result["destination_chunks"][destination] == chunks
        assert result["destination_bytes"][destination] == received


def test_to_df_same_seed_same_content(spark):
    first = frame_digest(dummy(spark, 2.0, 9).to_df())
    assert first[1] == N * N
    assert frame_digest(dummy(spark, 2.0, 9).to_df()) == first
    assert frame_digest(dummy(spark, 2.0, 10).to_df())[0] != first[0]


def test_to_rdd_and_compressible_payloads(spark):
    rdd = dummy(spark, 0.5, 3, compressible=True).to_rdd()
    assert rdd.getNumPartitions() == N
    records = rdd.take(60)
    assert len(records) == 60
    for destination, payload in records:
        assert isinstance(destination, int) and 0 <= destination < N
        assert isinstance(payload, bytes) and len(payload) in (1365, 1366)
        assert payload == bytes([destination & 0x7F]) * len(payload)
    sizes = dummy(spark, 0.5, 3).to_rdd().map(lambda r: len(r[1])).collect()
    assert len(sizes) == N * N and sum(sizes) == SIZE


def test_python_dummy_rdd_partition_by_destination(spark):
    size, partition, n = 256 << 10, 16 << 10, 16
    rdd = python_dummy_rdd(spark, size=size, skew=1.0, partition_size=partition, seed=2)
    assert rdd.getNumPartitions() == n
    shuffled = rdd.partitionBy(n, lambda d: d)

    def summarize(index, records):
        wrong, count, payload_bytes, sources = 0, 0, 0, set()
        for destination, record in records:
            source, _, payload = unpack_chunk(record)
            wrong += destination != index
            count += 1
            payload_bytes += len(payload)
            sources.add(source)
        yield index, wrong, count, payload_bytes, len(sources)

    summary = sorted(shuffled.mapPartitionsWithIndex(summarize).collect())
    assert [s[0] for s in summary] == list(range(n))
    assert all(wrong == 0 for _, wrong, _, _, _ in summary)
    assert sum(s[3] for s in summary) == size
    # The executors generated exactly what the pure function gives on the driver.
    spec = DummySpec.of(size, 1.0, partition, 2)
    expected = Counter(d for i in range(n) for d, _ in generate_partition(spec, i))
    assert {index: count for index, _, count, _, _ in summary} == {d: expected.get(d, 0) for d in range(n)}


def test_skewed_fact_follows_zipf(spark):
    from pyspark.sql import functions as F

    rows, keys = 30_000, 40
    fact = skewed_fact(spark, rows=rows, keys=keys, skew=1.2, payload_bytes=16, partitions=4, seed=3)
    assert fact.schema.simpleString() == "struct<id:bigint,key:bigint,payload:binary>"
    assert fact.rdd.getNumPartitions() == 4
    stats = fact.agg(
        F.count("*"),
        F.countDistinct("id"),
        F.min("id"),
        F.max("id"),
        F.min(F.length("payload")),
        F.max(F.length("payload")),
    ).first()
    assert tuple(stats) == (rows, rows, 0, rows - 1, 16, 16)
    counts = dict(fact.groupBy("key").count().collect())
    assert set(counts) <= set(range(keys))
    observed = [counts.get(k, 0) for k in range(keys)]
    assert_fits(observed, zipf_probabilities(keys, 1.2), what="skewed_fact keys")
    again = dict(
        skewed_fact(spark, rows=rows, keys=keys, skew=1.2, payload_bytes=16, partitions=4, seed=3)
        .groupBy("key")
        .count()
        .collect()
    )
    assert again == counts


def test_skewed_dimension(spark):
    dimension = skewed_dimension(spark, keys=40, partitions=3)
    assert dimension.schema.simpleString() == "struct<key:bigint,name:string>"
    assert dimension.rdd.getNumPartitions() == 3
    assert sorted(tuple(r) for r in dimension.collect()) == [(k, f"key-{k}") for k in range(40)]
    fact = skewed_fact(spark, rows=2000, keys=40, skew=1.0, payload_bytes=0, partitions=2, seed=1)
    assert fact.join(dimension, "key").count() == 2000


def test_python_dummy_df_is_built_from_arrow_batches(spark):
    size, partition, n = 512 << 10, 32 << 10, 16
    df = python_dummy_df(spark, size=size, skew=2.0, partition_size=partition, seed=6)
    assert df.schema.simpleString() == "struct<destination:int,payload:binary>"
    assert df.rdd.getNumPartitions() == n
    rows = df.groupBy("destination").agg(
        F.count("*").alias("chunks"), F.sum(F.length("payload")).alias("bytes")
    )
    got = {r["destination"]: (r["chunks"], r["bytes"]) for r in rows.collect()}
    assert "MapInArrow" in df._jdf.queryExecution().executedPlan().toString()
    # The executors generated exactly the chunks the pure function draws on the driver.
    spec = DummySpec.of(size, 2.0, partition, 6)
    expected = Counter()
    payload = Counter()
    for i in range(n):
        for destination, record in generate_partition(spec, i):
            expected[destination] += 1
            payload[destination] += len(unpack_chunk(record)[2])
    assert got == {d: (expected[d], payload[d]) for d in expected}
    assert sum(b for _, b in got.values()) == size


def test_pinned_run_places_reduce_tasks_round_robin_from_the_hot_executor(spark, run):
    # local-cluster's executors "0" and "1" share a host: ordered by id, the second is "1".
    pinned = dummy(spark, 2.0, 5).run(pin_executors=2, hot_executor=2)
    assert pinned["destination_executors"] == ["1", "0"] * (N // 2)
    # The same data as unpinned.
    unpinned = run(2.0, 5)
    assert pinned["destination_bytes"] == unpinned["destination_bytes"]
    assert pinned["destination_chunks"] == unpinned["destination_chunks"]
    with pytest.raises(ValueError, match="invalid hot_executor 3: it must be between 1 and 2"):
        dummy(spark, 2.0, 5).run(pin_executors=2, hot_executor=3)
