"""The DummyRDD shape and its checks, the same rules as the JVM's ``DummySpec``.

Every Python entry point that takes a DummyRDD shape (the JVM-backed :class:`DummyRDD`, the
Python generators and the benchmark's command line) builds a :class:`DummySpec`, so the shape
is checked here only. A test runs the same cases through the JVM's ``DummySpec``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, List, Tuple

from ..values import (
    INT_MAX,
    LONG_MAX,
    format_size,
    named,
    size_between,
    whole_number_between,
    zipf_exponent,
)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np


def zipf_probabilities(n: int, skew: float) -> "np.ndarray":
    """Probabilities of destinations 0..n-1 with weight w(x) = 1 / (x + 1) ** skew, normalised
    to sum to 1 (a float64 numpy array); skew 0 gives the uniform 1 / n."""
    import numpy as np

    n = named("number of destinations", n, whole_number_between, 1, INT_MAX)
    skew = named("skew", skew, zipf_exponent)
    weights = np.arange(1, n + 1, dtype=np.float64) ** -skew
    return weights / weights.sum()


@dataclass(frozen=True)
class DummySpec:
    """The shape of a DummyRDD, validated on construction (ValueError with the reason).

    ``total_bytes`` and ``partition_bytes`` are ints; :meth:`of` also takes size strings.
    """

    total_bytes: int
    partition_bytes: int
    skew: float = 2.0
    seed: int = 0
    compressible: bool = False

    def __post_init__(self) -> None:
        total = named("size", self.total_bytes, size_between, 1)
        partition = named("partition size", self.partition_bytes, size_between, 1)
        object.__setattr__(self, "total_bytes", total)
        object.__setattr__(self, "partition_bytes", partition)
        object.__setattr__(self, "skew", named("skew", self.skew, zipf_exponent))
        object.__setattr__(self, "seed", named("seed", self.seed, whole_number_between, 0, LONG_MAX))
        object.__setattr__(self, "compressible", bool(self.compressible))
        if partition > total:
            raise ValueError(
                f"invalid partition size {format_size(partition)} ({partition} bytes): it must not "
                f"exceed size {format_size(total)} ({total} bytes)"
            )
        n = -(-total // partition)
        if n > INT_MAX:
            raise ValueError(
                f"size / partition size gives {n} partitions, more than Spark supports ({INT_MAX})"
            )
        last = total - (n - 1) * partition
        if last < n or partition // n > INT_MAX:
            raise ValueError(
                f"size {total} with partition size {partition} gives {n} partitions, and the last "
                f"({last} bytes) cannot be cut into {n} chunks of at least one byte (and each chunk "
                "must stay below 2 GiB): use a larger size or partition size"
            )

    @classmethod
    def of(
        cls,
        size: Any = "1g",
        skew: Any = 2.0,
        partition_size: Any = "32m",
        seed: Any = 0,
        compressible: bool = False,
    ) -> "DummySpec":
        """A spec from sizes given as ints (bytes) or Spark size strings ("512m", "4g")."""
        return cls(
            named("size", size, size_between, 1),
            named("partition size", partition_size, size_between, 1),
            skew,
            seed,
            compressible,
        )

    @property
    def num_partitions(self) -> int:
        """n = ceil(size / partition size): partitions, chunks per partition and destinations."""
        return -(-self.total_bytes // self.partition_bytes)

    def partition_size(self, index: int) -> int:
        """Bytes of partition ``index``: the partition size, the last one the remainder."""
        n = self.num_partitions
        index = named("partition index", index, whole_number_between, 0, n - 1)
        if index == n - 1:
            return self.total_bytes - (n - 1) * self.partition_bytes
        return self.partition_bytes

    def chunk_sizes(self, index: int) -> List[int]:
        """The n chunk sizes of partition ``index``: floor(P_i / n) bytes each, the remainder
        spread one byte each over the first chunks."""
        n = self.num_partitions
        base, extra = divmod(self.partition_size(index), n)
        return [base + 1] * extra + [base] * (n - extra)

    def probabilities(self) -> "np.ndarray":
        """Probability of each destination 0..n-1 (see :func:`zipf_probabilities`)."""
        return zipf_probabilities(self.num_partitions, self.skew)

    def expected_bytes_per_destination(self) -> "np.ndarray":
        """Expected bytes each destination receives, from the weights alone (sums to size)."""
        return self.probabilities() * float(self.total_bytes)

    def jvm_args(self) -> Tuple[int, int, float, int, bool]:
        """(totalBytes, partitionBytes, skew, seed, compressible) as the JVM facade takes them."""
        return self.total_bytes, self.partition_bytes, self.skew, self.seed, self.compressible
