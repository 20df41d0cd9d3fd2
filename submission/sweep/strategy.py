"""How a sweep chooses what to measure: the one protocol its strategies are written against.

A strategy (``grid.Grid``: every combination, ``search.Search``: optuna within a budget)
decides which points run and where the baselines go between them. It sees the sweep only
through ``Measurements``: the journal to read, the directory's own config, a plan to
announce, and a point to check or to measure. It never sees the sweeper, its request or
its events, so a strategy is tested and replaced on its own.
"""

from __future__ import annotations

from typing import Any, Protocol

from submission.sweep.journal import Measurement, SweepFile
from submission.sweep.space import Point


class Measurements(Protocol):
    """What a strategy may do with the sweep it runs in."""

    #: the sweep's file as read so far; each ``run`` appends to it
    journal: SweepFile
    #: the directory's own ``[engine.config]`` (the baseline)
    base: dict[str, Any]

    def plan(self, total: int, done: int) -> None:
        """Announce ``total`` measurements to run, ``done`` points already in the journal."""

    def check(self, point: Point) -> None:
        """Raise ``UsageError`` when the point cannot be written exactly (before any run)."""

    def run(self, point: Point, role: str) -> Measurement:
        """Measure the point (``role``: ``baseline`` or ``point``) and record it."""
        ...


class Strategy(Protocol):
    def measure(self, sweep: Measurements) -> None:
        """Measure the points this strategy chooses, with the baselines between them."""
