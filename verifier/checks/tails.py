"""The sampling noise of a count: how many events an honest run may show by chance alone."""

from __future__ import annotations

import math
import statistics

#: the chance an honest count may have of breaking the left-out allowance by sampling noise
#: alone: the one-sided tail of three standard deviations of a normal variable
LEFT_OUT_TAIL = 0.00135


def poisson_upper(mean: float, tail: float = LEFT_OUT_TAIL) -> int:
    """The smallest count k with P(X > k) <= ``tail`` for a Poisson count X of ``mean``.

    Exact, by summing the distribution, where that is cheap; beyond a mean of 500 the
    normal approximation with its continuity correction, which is exact enough there."""
    if mean <= 0:
        return 0
    if mean > 500:
        z = statistics.NormalDist().inv_cdf(1.0 - tail)
        return math.ceil(mean + z * math.sqrt(mean) - 0.5)
    k, pmf = 0, math.exp(-mean)
    below = pmf  # P(X <= k)
    while 1.0 - below > tail:
        k += 1
        pmf *= mean / k
        below += pmf
    return k


def left_out_allowance(rate: float, tokens: int) -> float:
    """The share of probed positions that may leave out the reference's top: the decode's
    large-gap allowance ``rate`` (an honest engine lists its own top, the token it
    generated, so its left-out positions are its decode's large gaps), with the sampling
    noise of a count of ``tokens`` positions at that rate: the count a Poisson count of
    mean ``rate * tokens`` exceeds with probability ``LEFT_OUT_TAIL`` at most, over
    ``tokens``. A few probes hold few tokens (128 on tiny), and a count of a few has a
    longer upper tail than three standard deviations give (at a mean of 7.2, 17 where
    they give 15): an honest window of 24 with int8 weights left out 5 of 128 (3.9 %)
    against a rate of 3.2 % while its decode's large gaps over 1,408 sampled tokens were
    1.1 %, and an honest window of 16 on a GPU left out 8 of 128 against 5.7 %."""
    if tokens <= 0:
        return rate
    return max(rate, poisson_upper(rate * tokens) / tokens)
