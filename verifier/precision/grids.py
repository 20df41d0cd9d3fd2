"""The grids a public report's engine-made numbers are put on, and how many values each
allows (its bits are log2 of that): ``docs/measurement.md``, "How many bits a report
carries", gives them field by field."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

#: the bound on the number bits one public report may carry (checked before signing)
NUMBER_BITS = 32.0

#: PPL: 3 significant digits within a factor of 2 of the cap, 2 outside it, in [1, 1e4]
PPL_NEAR = 3
PPL_FAR = 2
PPL_RANGE = (1.0, 1e4)
#: TPS (median): 3 significant digits in [0.1, 1e6]; 0 below
TPS_DIGITS = 3
TPS_RANGE = (0.1, 1e6)
#: the 95 % interval's half-width, relative to the median, rounded up onto this grid (%)
CI_GRID = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 25, 30, 40, 50, 75, 100)
#: the time a run finished, rounded down to this many seconds (never before it started)
FINISHED_GRID_S = 1800
#: when the run's end shows anywhere else (a board's head, a queue's history): the grid
#: point after ``finished`` or, where the verifier's own work after the run passed it, the
#: next one (``verifier.scale.queue.hold``): one bit beside ``finished``'s
PUBLICATION_BITS = 1.0
#: the numbers of a failure's message: integers under 1000 as they are, others to one
#: significant digit (marked ``~``), as many as the report's budget leaves, the rest
#: ``...``; one costs log2 of 1000 integers and the 1-digit values from 1 to 1e12
FAILURE_NUMBER_BITS = math.log2(1000 + 9 * 12)
_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"


def significant(x: float, digits: int, direction: int = 0) -> float:
    """``x`` (> 0) to ``digits`` significant digits: the nearest, or with ``direction``
    -1 or +1 the next one down or up (a value on the grid stays)."""
    if direction == 0 or x <= 0:
        return float(f"{x:.{digits}g}")
    e = math.floor(math.log10(x)) - digits + 1
    q = x / 10.0**e
    m = math.floor(q + 1e-9) if direction < 0 else math.ceil(q - 1e-9)
    return float(f"{m}e{e}")


def count_significant(lo: float, hi: float, digits: int) -> int:
    """How many values with ``digits`` significant digits lie in ``[lo, hi]`` (lo > 0)."""
    n = 0
    for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        step = 10.0 ** (k - digits + 1)
        first, last = 10 ** (digits - 1), 10**digits - 1
        a = max(first, math.ceil(lo / step - 1e-9))
        b = min(last, math.floor(hi / step + 1e-9))
        n += max(0, b - a + 1)
    return n


def ppl_public(value: float | None, cap: float | None) -> float | None:
    """The public PPL: rounded toward the cap's side it is on (a PPL under the cap never
    reads as over it, nor one over it as under), so the direction costs no bit the
    verdict did not already carry."""
    if value is None or not math.isfinite(value):
        return None
    lo, hi = PPL_RANGE
    x = min(max(value, lo), hi)
    near = cap is not None and cap / 2 <= x <= cap * 2
    direction = 0 if cap is None else (-1 if value <= cap else 1)
    return significant(x, PPL_NEAR if near else PPL_FAR, direction)


def ppl_values(cap: float | None) -> int:
    """How many public PPL values there are under ``cap`` (undefined included)."""
    lo, hi = PPL_RANGE
    far = count_significant(lo, hi, PPL_FAR)
    if cap is None:
        return count_significant(lo, hi, PPL_NEAR) + 1
    near = count_significant(max(lo, cap / 2), min(hi, cap * 2), PPL_NEAR)
    return near + far + 1


def tps_public(value: float) -> float:
    if value <= 0 or not math.isfinite(value):
        return 0.0
    lo, hi = TPS_RANGE
    return significant(min(max(value, lo), hi), TPS_DIGITS)


TPS_VALUES = count_significant(*TPS_RANGE, TPS_DIGITS) + 1


def ci_public(median: float, width: int) -> list[float]:
    """The public interval: the public median widened by ``width`` % each side."""
    return [tps_public(median * (1 - width / 100)), tps_public(median * (1 + width / 100))]


def half_width(median: float, ci: list[float]) -> int:
    """The narrowest width on ``CI_GRID`` (%) whose public interval around the public
    ``median`` holds the whole interval ``ci``."""
    for g in CI_GRID:
        lo, hi = ci_public(median, g)
        if lo <= ci[0] + 1e-9 and hi >= ci[1] - 1e-9:
            return g
    return CI_GRID[-1]


def speedup_public(median: float | None, baseline: Any) -> float | None:
    if median is None or not isinstance(baseline, (int, float)) or baseline <= 0:
        return None
    return significant(median / baseline, 3)


def _time(value: str) -> datetime:
    t = datetime.fromisoformat(value)
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def finished_public(finished: str, started: str) -> str:
    """``finished`` rounded down to ``FINISHED_GRID_S``, but never before ``started``."""
    end, start = _time(finished).timestamp(), _time(started).timestamp()
    down = math.floor(end / FINISHED_GRID_S) * FINISHED_GRID_S
    if down < start:
        return started
    return datetime.fromtimestamp(down, UTC).strftime(_TIME)


def finished_values(evaluation_s: float) -> int:
    """How many public ``finished`` times one run can end on: its held-out part lasts at
    most the evaluation limit, and the reference's judging of it as long again."""
    return 1 + math.ceil(2 * evaluation_s / FINISHED_GRID_S)
