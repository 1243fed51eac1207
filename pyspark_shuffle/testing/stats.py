"""Goodness of fit for tests of skewed generators: Pearson's chi-square, without scipy.

    observed = counts of each destination (or key), probabilities = what they should follow
    assert_fits(observed, zipf_probabilities(n, alpha))

Cells whose expected count is below ``min_expected`` (5, the usual rule for the chi-square
approximation) are pooled, from the tail, into one cell. The critical value comes from the
Wilson–Hilferty approximation of the chi-square quantile (Wilson & Hilferty, 1931):
``df * (1 - 2/(9 df) + z * sqrt(2/(9 df)))**3``, with z the standard normal quantile. At the
0.999 quantile it lies above the exact value by 2.3% at df 2, 1.8% at df 3, 0.6% at df 10 and
under 0.3% from df 20 (so the test is marginally more lenient than its nominal level; for
df = 1 the exact value is used). Tests run fixed seeds, so a passing test stays passing; at
significance 0.001 a correct generator would fail for about one seed in a thousand, while a
wrong law (an exponent off by 0.25, a shifted rank) exceeds the limit many times over at the
sample sizes the tests use.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

#: Standard normal quantiles for the significance levels the helpers accept.
_Z = {0.05: 1.6448536269514722, 0.01: 2.3263478740408408, 0.001: 3.090232306167813}
#: Exact chi-square quantiles with 1 degree of freedom (z ** 2 of the two-sided normal).
_DF1 = {0.05: 3.841458820694124, 0.01: 6.634896601021214, 0.001: 10.827566170662733}


def pooled(observed: Sequence[float], probabilities: Sequence[float], min_expected: float = 5.0):
    """(observed, expected) counts after pooling the cells, from the last one backwards, until
    every cell expects at least ``min_expected`` (the last kept cell absorbs a short remainder)."""
    total = float(sum(observed))
    if len(observed) != len(probabilities):
        raise ValueError(f"{len(observed)} observed cells but {len(probabilities)} probabilities")
    if total <= 0:
        raise ValueError("no observations")
    cells_o, cells_e = [], []
    acc_o = acc_e = 0.0
    for o, p in zip(observed, probabilities):
        acc_o += o
        acc_e += p * total
        if acc_e >= min_expected:
            cells_o.append(acc_o)
            cells_e.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0 or acc_o > 0:
        if cells_e:
            cells_o[-1] += acc_o
            cells_e[-1] += acc_e
        else:
            cells_o.append(acc_o)
            cells_e.append(acc_e)
    return cells_o, cells_e


def chi_square(
    observed: Sequence[float], probabilities: Sequence[float], min_expected: float = 5.0
) -> Tuple[float, int]:
    """Pearson's statistic sum((O - E)**2 / E) over the pooled cells, and its degrees of freedom
    (cells - 1). ``probabilities`` must sum to 1."""
    if abs(sum(probabilities) - 1.0) > 1e-9:
        raise ValueError(f"probabilities sum to {sum(probabilities)}, not 1")
    cells_o, cells_e = pooled(observed, probabilities, min_expected)
    statistic = sum((o - e) ** 2 / e for o, e in zip(cells_o, cells_e))
    return statistic, len(cells_e) - 1


def critical_value(df: int, significance: float = 0.001) -> float:
    """The chi-square (1 - significance) quantile with ``df`` degrees of freedom (exact for
    df = 1, Wilson–Hilferty otherwise); significance 0.05, 0.01 or 0.001."""
    if significance not in _Z:
        raise ValueError(f"significance must be one of {sorted(_Z)}, got {significance}")
    if df < 1:
        raise ValueError(f"degrees of freedom must be >= 1, got {df}")
    if df == 1:
        return _DF1[significance]
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + _Z[significance] * math.sqrt(a)) ** 3


def assert_fits(
    observed: Sequence[float],
    probabilities: Sequence[float],
    significance: float = 0.001,
    what: str = "observed counts",
) -> float:
    """Assert that ``observed`` counts are a plausible sample of ``probabilities`` (chi-square
    test at ``significance``); return the statistic."""
    statistic, df = chi_square(observed, probabilities)
    if df < 1:
        raise AssertionError(f"{what}: too few observations for a chi-square test ({sum(observed)})")
    limit = critical_value(df, significance)
    assert statistic <= limit, (
        f"{what} do not follow the expected distribution: chi-square {statistic:.1f} > "
        f"{limit:.1f} (df {df}, significance {significance}); observed {list(observed)[:12]}..."
    )
    return statistic
