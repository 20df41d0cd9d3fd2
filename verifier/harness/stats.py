"""Summary statistics of timed trials: median, mean, spread and a 95 % interval.

The interval is a Student t-interval of the *mean* across trials (trials are few, so a
bootstrap of the median would only resample three numbers). With one trial there is no
interval. The t quantiles are the textbook two-sided 95 % values; beyond 30 degrees of
freedom a Cornish-Fisher expansion of the normal quantile is accurate to 0.001.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

CI_METHOD = "95% Student t-interval of the mean across trials, lower end cut at 0"

# two-sided 95 % quantiles of Student's t, degrees of freedom 1..30
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_Z975 = 1.959964


def t975(df: int) -> float:
    """The 97.5 % quantile of Student's t with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("a t quantile needs at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    stdev: float
    cv: float
    ci95: tuple[float, float] | None
    ci_method: str = CI_METHOD

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "median": self.median,
            "mean": self.mean,
            "stdev": self.stdev,
            "cv": self.cv,
            "ci95": list(self.ci95) if self.ci95 is not None else None,
            "ci_method": self.ci_method,
        }


def summarize(values: Sequence[float]) -> Summary:
    """Median, mean, sample standard deviation, CV (stdev / mean) and the t-interval."""
    if not values:
        raise ValueError("no values to summarize")
    n = len(values)
    mean = statistics.fmean(values)
    median = statistics.median(values)
    stdev = statistics.stdev(values) if n > 1 else 0.0
    cv = stdev / mean if mean else math.nan
    ci: tuple[float, float] | None = None
    if n > 1:
        half = t975(n - 1) * stdev / math.sqrt(n)
        # a rate is never negative: with few, very noisy trials the interval is cut at 0
        ci = (max(0.0, mean - half), mean + half)
    return Summary(n=n, median=median, mean=mean, stdev=stdev, cv=cv, ci95=ci)
