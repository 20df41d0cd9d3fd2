"""Quotas over a rolling window: pure arithmetic over the times submissions were charged.

A submission is charged once, when its bundle is first accepted; the same bundle again
(the same digest) is the same request and costs nothing. Over the limit, the answer
names when the oldest charge in the window leaves it: that is when the next slot opens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Usage:
    used: int
    limit: int
    next_slot: float | None  # epoch seconds when a slot opens; None while one is free

    @property
    def full(self) -> bool:
        return self.next_slot is not None

    def retry_after(self, at: float) -> int:
        """Whole seconds from ``at`` until the next slot opens (at least 1)."""
        return max(1, math.ceil((self.next_slot or at) - at))


def usage(charged_at: Sequence[float], limit: int, window_s: float, at: float) -> Usage:
    """How much of ``limit`` the charges ``charged_at`` use at time ``at``."""
    inside = sorted(t for t in charged_at if t > at - window_s)
    if len(inside) < limit:
        return Usage(len(inside), limit, None)
    return Usage(len(inside), limit, inside[len(inside) - limit] + window_s)
