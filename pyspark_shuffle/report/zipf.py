"""The Zipf exponent of a skewed shuffle's reduce partitions, estimated from their sizes."""

from __future__ import annotations

import math
from typing import Sequence

#: Exponents beyond this are reported as this (the partitions then are one hot and the rest).
MAX_EXPONENT = 20.0


def zipf_exponent(sizes: Sequence[float]) -> float:
    """The maximum-likelihood alpha of Zipf's law size(rank) ~ rank ** -alpha over ``sizes``
    ranked largest first, each byte an observation of its partition's rank: the alpha whose mean
    log-rank equals the bytes' mean log-rank. Exact Zipf sizes give their alpha back; uniform
    sizes give about 0 (a little more: ranking random sizes makes them look skewed). Zero-byte
    partitions count as ranks that drew no bytes. 0.0 for fewer than two partitions or no bytes."""
    ranked = sorted((float(s) for s in sizes), reverse=True)
    total = sum(ranked)
    if len(ranked) < 2 or total <= 0:
        return 0.0
    log_ranks = [math.log(r) for r in range(1, len(ranked) + 1)]
    observed = sum(s * lr for s, lr in zip(ranked, log_ranks)) / total

    def mean_log_rank(alpha: float) -> float:
        weights = [math.exp(-alpha * lr) for lr in log_ranks]
        return sum(w * lr for w, lr in zip(weights, log_ranks)) / sum(weights)

    # mean_log_rank falls from the uniform mean (alpha 0) towards 0: bisect for the observed one.
    if observed >= mean_log_rank(0.0):
        return 0.0
    low, high = 0.0, MAX_EXPONENT
    if observed <= mean_log_rank(high):
        return high
    for _ in range(60):
        middle = (low + high) / 2
        if mean_log_rank(middle) > observed:
            low = middle
        else:
            high = middle
    return (low + high) / 2
