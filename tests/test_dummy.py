"""JVM-free parts of pyspark_shuffle.dummy: the DummyRDD shape, validation and the Python generator."""

import json
import math
import re
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from pyspark_shuffle.dummy import (
    DummyRDD,
    DummySpec,
    generate_partition,
    python_dummy_rdd,
    skewed_dimension,
    skewed_fact,
    unpack_chunk,
    zipf_probabilities,
)
from pyspark_shuffle.testing.stats import assert_fits, chi_square, critical_value, pooled

MIB = 1 << 20


# ---------------------------------------------------------------------------------------------
# Shape


def test_defaults_follow_the_paper():
    spec = DummyRDD(None).spec  # 1 GiB in 32 MiB partitions, alpha 2
    assert (spec.total_bytes, spec.partition_bytes, spec.skew) == (1 << 30, 32 * MIB, 2.0)
    assert DummyRDD(None).num_partitions == 32


@pytest.mark.parametrize(
    "size, partition_size, n, last",
    [("4g", "512m", 8, 512 * MIB), (1000, 300, 4, 100), ("1m", "1m", 1, MIB), (10_000, 990, 11, 100)],
)
def test_partitions_and_remainder(size, partition_size, n, last):
    spec = DummySpec.of(size=size, partition_size=partition_size)
    assert spec.num_partitions == n
    assert spec.partition_size(n - 1) == last
    assert sum(spec.partition_size(i) for i in range(n)) == spec.total_bytes


@pytest.mark.parametrize("size, partition_size", [(1000, 300), (10_000, 990), ("3m", "100k"), (97, 97)])
def test_chunk_sizes_sum_exactly_to_size(size, partition_size):
    spec = DummySpec.of(size=size, partition_size=partition_size)
    n = spec.num_partitions
    total = 0
    for i in range(n):
        sizes = spec.chunk_sizes(i)
        assert len(sizes) == n
        assert sum(sizes) == spec.partition_size(i)
        assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1
        assert sizes == sorted(sizes, reverse=True)  # the remainder goes to the first chunks
        total += sum(sizes)
    assert total == spec.total_bytes


def test_chunk_sizes_example():
    spec = DummySpec.of(size=1000, partition_size=300)  # partitions 300, 300, 300, 100
    assert spec.chunk_sizes(0) == [75, 75, 75, 75]
    assert spec.chunk_sizes(3) == [25, 25, 25, 25]
    spec = DummySpec.of(size=23, partition_size=10)  # 10, 10, 3: n = 3
    assert spec.chunk_sizes(0) == [4, 3, 3] and spec.chunk_sizes(2) == [1, 1, 1]
    with pytest.raises(ValueError, match="partition index"):
        spec.chunk_sizes(3)


@pytest.mark.parametrize("alpha", [0.0, 0.5, 1.0, 2.0, 3.7])
def test_weights_are_zipf(alpha):
    n = 17
    p = zipf_probabilities(n, alpha)
    assert p.shape == (n,) and math.isclose(p.sum(), 1.0, rel_tol=1e-12)
    # w(x) / w(0) = 1 / (x + 1) ** alpha
    assert np.allclose(p / p[0], [1 / (x + 1) ** alpha for x in range(n)], rtol=1e-12)
    if alpha == 0:
        assert np.allclose(p, 1 / n)
    else:
        assert np.all(np.diff(p) < 0)


def test_expected_bytes_per_destination():
    dummy = DummyRDD(None, size="4g", skew=1.0, partition_size="512m")
    expected = dummy.expected_bytes_per_destination()
    assert isinstance(expected, np.ndarray) and expected.shape == (8,)
    assert math.isclose(expected.sum(), 4 << 30, rel_tol=1e-12)
    harmonic = sum(1 / k for k in range(1, 9))
    assert math.isclose(expected[0], (4 << 30) / harmonic, rel_tol=1e-12)
    assert math.isclose(expected[3], (4 << 30) / harmonic / 4, rel_tol=1e-12)
    uniform = DummyRDD(None, size="1g", skew=0, partition_size="32m").expected_bytes_per_destination()
    assert np.allclose(uniform, (1 << 30) / 32)


# ---------------------------------------------------------------------------------------------
# Validation (before any JVM)


@pytest.mark.parametrize(
    "kwargs, reason",
    [
        (dict(skew=-0.5), "skew .*finite number >= 0"),
        (dict(skew=float("nan")), "skew .*finite number >= 0"),
        (dict(skew=float("inf")), "skew .*finite number >= 0"),
        (dict(skew="2"), "skew .*expected a number"),
        (dict(size=0), "size 0: it must be positive"),
        (dict(size="0m"), "size '0m': it must be positive"),
        (dict(size=-5), "size -5: it must be positive"),
        (dict(partition_size=0), "partition size 0: it must be positive"),
        (dict(size="1.5g"), "fractional"),
        (dict(size="1q"), "unknown size unit"),
        (dict(size="1m", partition_size="2m"), "partition size 2m .* must not exceed size 1m"),
        # 1000 bytes in 10-byte partitions: 100 partitions, the last (10 bytes) cannot hold 100 chunks
        (dict(size=1000, partition_size=10), "gives 100 partitions, and the last \\(10 bytes\\) cannot"),
        # 1 MiB + 1 byte in 1 KiB partitions: 1025 partitions, the last holds 1 byte
        (dict(size=MIB + 1, partition_size="1k"), "gives 1025 partitions"),
        (dict(seed=-1), "seed -1"),
        (dict(seed=1.5), "seed 1.5: expected an int"),
    ],
)
def test_invalid_arguments(kwargs, reason):
    args = dict(size="1m", skew=1.0, partition_size="64k", seed=0)
    args.update(kwargs)
    with pytest.raises(ValueError, match=reason):
        DummyRDD(None, **args)
    with pytest.raises(ValueError, match=reason):
        python_dummy_rdd(None, **args)


def test_validation_happens_before_the_jvm():
    class NoJvm:
        def __getattr__(self, name):
            raise AssertionError(f"touched spark.{name}")

    with pytest.raises(ValueError, match="skew"):
        DummyRDD(NoJvm(), skew=-1)
    with pytest.raises(ValueError, match="keys 0"):
        skewed_fact(NoJvm(), rows=10, keys=0, skew=1.0)
    with pytest.raises(ValueError, match="rows -1"):
        skewed_fact(NoJvm(), rows=-1, keys=10, skew=1.0)
    with pytest.raises(ValueError, match="skew"):
        skewed_fact(NoJvm(), rows=10, keys=10, skew=float("nan"))
    with pytest.raises(ValueError, match="payload_bytes -1"):
        skewed_fact(NoJvm(), rows=10, keys=10, skew=1.0, payload_bytes=-1)
    with pytest.raises(ValueError, match="partitions 0"):
        skewed_fact(NoJvm(), rows=10, keys=10, skew=1.0, partitions=0)
    with pytest.raises(ValueError, match="keys 2147483648"):
        skewed_dimension(NoJvm(), keys=2**31)
    with pytest.raises(ValueError, match="partitions 0"):
        skewed_dimension(NoJvm(), keys=3, partitions=0)
    # A valid plan needs no session at all.
    assert DummyRDD(NoJvm(), size="64m", partition_size="8m").num_partitions == 8


def test_importing_the_package_stays_light():
    code = (
        "import sys, pyspark_shuffle\n"
        "heavy = ('numpy', 'msgpack', 'pyspark', 'py4j', 'pyspark_shuffle.dummy')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert pyspark_shuffle.DummyRDD.__module__ == 'pyspark_shuffle.dummy.jvm'\n"
        "assert callable(pyspark_shuffle.metrics) and callable(pyspark_shuffle.skewed_fact)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---------------------------------------------------------------------------------------------
# Chi-square helper


def test_critical_values_match_tables():
    # Published chi-square quantiles (0.999 and 0.95).
    for df, exact in [(1, 10.828), (2, 13.816), (5, 20.515), (10, 29.588), (30, 59.703), (100, 149.449)]:
        assert exact * 0.9999 <= critical_value(df) <= exact * 1.025
    for df, exact in [(10, 18.307), (30, 43.773)]:
        assert math.isclose(critical_value(df, 0.05), exact, rel_tol=0.01)


def test_pooling_keeps_totals():
    p = zipf_probabilities(40, 2.0)
    observed = [100] * 40
    cells_o, cells_e = pooled(observed, p)
    assert sum(cells_o) == 4000 and math.isclose(sum(cells_e), 4000)
    assert min(cells_e) >= 5 and len(cells_e) < 40


def test_chi_square_rejects_wrong_laws():
    """The check used below has power: samples of a nearby law fail it."""
    rng = np.random.default_rng(7)
    n, draws = 32, 20_000
    truth = zipf_probabilities(n, 1.0)
    sample = np.bincount(rng.choice(n, size=draws, p=truth), minlength=n)
    assert_fits(sample, truth)
    for wrong in (zipf_probabilities(n, 1.25), zipf_probabilities(n, 0.75), np.roll(truth, 1)):
        statistic, df = chi_square(sample, wrong)
        assert statistic > 3 * critical_value(df)


# ---------------------------------------------------------------------------------------------
# The pure-Python generator


def destinations_of(spec):
    return [d for i in range(spec.num_partitions) for d, _ in generate_partition(spec, i)]


def test_records_cover_every_chunk_exactly():
    spec = DummySpec.of(size=10_000, skew=1.5, partition_size=990, seed=3)  # 11 partitions
    n = spec.num_partitions
    total = 0
    for i in range(n):
        chunks = list(generate_partition(spec, i))
        assert len(chunks) == n
        for j, (destination, record) in enumerate(chunks):
            source, index, payload = unpack_chunk(record)
            assert (source, index) == (i, j) and 0 <= destination < n
            assert isinstance(payload, bytes) and len(payload) == spec.chunk_sizes(i)[j]
            total += len(payload)
    assert total == spec.total_bytes


@pytest.mark.parametrize("alpha", [0.0, 1.0, 2.0])
@pytest.mark.parametrize("n", [8, 50, 120])
def test_destinations_follow_zipf(alpha, n):
    # n partitions of n one-byte chunks: n * n draws per seed; a few seeds for small n.
    seeds = range(max(1, 20_000 // (n * n)))
    counts = np.zeros(n, dtype=np.int64)
    for seed in seeds:
        spec = DummySpec.of(size=n * n, skew=alpha, partition_size=n, seed=seed)
        assert spec.num_partitions == n
        counts += np.bincount(destinations_of(spec), minlength=n)
    p = zipf_probabilities(n, alpha)
    assert_fits(counts, p, what=f"destinations (alpha {alpha}, n {n})")
    # The top destination within 4.5 binomial standard deviations of its expectation.
    draws = counts.sum()
    assert abs(counts[0] - draws * p[0]) <= 4.5 * math.sqrt(draws * p[0] * (1 - p[0]))


def test_alpha_zero_is_uniform():
    n = 100
    counts = np.bincount(
        destinations_of(DummySpec.of(size=n * n, skew=0, partition_size=n, seed=11)), minlength=n
    )
    assert_fits(counts, np.full(n, 1 / n))
    # Each destination's count is Binomial(10000, 1/100): mean 100, std 9.95.
    assert counts.min() >= 100 - 4.5 * 9.95 and counts.max() <= 100 + 4.5 * 9.95


def test_reproducible_by_seed():
    spec = DummySpec.of(size=5000, skew=1.0, partition_size=1000, seed=42)
    again = DummySpec.of(size=5000, skew=1.0, partition_size=1000, seed=42)
    other = DummySpec.of(size=5000, skew=1.0, partition_size=1000, seed=43)
    for i in range(spec.num_partitions):
        first = list(generate_partition(spec, i))
        assert first == list(generate_partition(again, i)) == list(generate_partition(spec, i))
        assert first != list(generate_partition(other, i))
    # Partitions draw from different streams.
    assert list(generate_partition(spec, 0)) != list(generate_partition(spec, 1))


def test_payloads_incompressible_unless_asked():
    random_spec = DummySpec.of(size=4 * MIB, skew=1.0, partition_size=MIB, seed=1)
    payload = b"".join(unpack_chunk(r)[2] for _, r in generate_partition(random_spec, 0))
    assert len(payload) == MIB and len(zlib.compress(payload)) > 0.99 * MIB
    plain_spec = DummySpec.of(size=4 * MIB, skew=1.0, partition_size=MIB, seed=1, compressible=True)
    chunks = list(generate_partition(plain_spec, 0))
    payload = b"".join(unpack_chunk(r)[2] for _, r in chunks)
    assert len(zlib.compress(payload)) < 0.01 * MIB
    # Compressible or not, the same seed draws the same destinations.
    assert [d for d, _ in chunks] == [d for d, _ in generate_partition(random_spec, 0)]


# ---------------------------------------------------------------------------------------------
# The shape rule, judged alike by the JVM (DummySpecSuite reads the same cases)

SHARED_CASES = json.loads(
    (Path(__file__).resolve().parent / "shared" / "dummy_spec_cases.json").read_text(encoding="utf-8")
)["cases"]


@pytest.mark.parametrize("case", SHARED_CASES, ids=lambda c: f"{c['size']}/{c['partition_size']}/{c['skew']}")
def test_shared_shape_cases(case):
    if case["valid"]:
        spec = DummySpec(case["size"], case["partition_size"], float(case["skew"]))
        assert spec.num_partitions == case["num_partitions"]
        assert spec.chunk_sizes(spec.num_partitions - 1) == case["last_chunk_sizes"]
    else:
        with pytest.raises(ValueError, match=re.escape(case["error"])):
            DummySpec(case["size"], case["partition_size"], float(case["skew"]))
