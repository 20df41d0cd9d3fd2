"""When a verification's end may show: held to the report's grid.

An engine that has seen held-out data can carry it out in how long its run takes: it
stalls on requests that are not timed, which stops no check and costs no TPS. The signed
report says when the run finished only to ``FINISHED_GRID_S`` (30 minutes), and charges
that; everything else a participant or the public can read about the run's end must say
no more. So nothing about a request changes in public between its claim and the grid
point after its report's public ``finished``: the fence, the record and the signed head
(``made_at`` and the store's commit), the FINISHED or FAILED mark in the queue (its
history's ``at``, the Hub's commit time), and, as the worker or dispatcher claims nothing
else meanwhile, the next claim. Lease renewals go on at the keeper's own ticks, which the
engine does not set; they are not state changes (``history`` does not list them).

A run whose engine never started (its report's stages are all of intake and the
preparation before a start: a bundle rejected at intake or at its rebuild) is not held:
what it shows was fixed before any engine ran. Every other run is, an engine that never
became ready too (a report need not say whether the held-out part began). A run that ended without a
report is held to the grid point after the moment its end was known, as if that were
its ``finished``. Where the verifier's own work after the run (writing, signing, fetching
a job's logs) has already passed the grid point, the next one is taken: the public time
is always a grid point.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from verifier.precision import FINISHED_GRID_S
from verifier.scale.queue.request import now, parse_time

#: the stages of a run that ends before any engine starts
NO_ENGINE = frozenset(
    {"intake", "environment", "data", "weights", "rebuild", "teardown", "verdict"}
)


def grid_after(t: datetime, grid_s: float = FINISHED_GRID_S) -> datetime:
    """The first grid point strictly after ``t``."""
    return datetime.fromtimestamp((math.floor(t.timestamp() / grid_s) + 1) * grid_s, UTC)


def exposed(report: dict[str, Any] | None) -> bool:
    """Whether the run behind ``report`` (None: no report) may have sent an engine
    held-out data: unless its report shows that no engine started."""
    if report is None:
        return True
    return any(s.get("name") not in NO_ENGINE for s in report.get("stages") or [])


@dataclass
class Hold:
    """Waits until a request's end may show. ``clock`` and ``wait`` are the wall clock and
    a sleep (tests give a clock of their own, and a wait that moves it)."""

    clock: Callable[[], datetime] = now
    wait: Callable[[float], Any] = time.sleep
    grid_s: float = FINISHED_GRID_S

    def release_at(self, report: dict[str, Any] | None) -> datetime | None:
        """The grid point the request's end shows at; None: no hold (see the module)."""
        if not exposed(report):
            return None
        at = self.clock()
        finished = (report or {}).get("finished")
        point = grid_after(parse_time(finished) if finished else at, self.grid_s)
        return point if point >= at else grid_after(at, self.grid_s)

    def until(self, report: dict[str, Any] | None) -> datetime | None:
        """Wait for ``release_at(report)`` and return it: the time to stamp what changes
        then (None: no hold, stamp the clock's time)."""
        point = self.release_at(report)
        if point is None:
            return None
        while (left := (point - self.clock()).total_seconds()) > 0:
            self.wait(min(left, 60.0))
        return point
