"""The grid: every combination of the knobs' values, each measured once, in a seeded order.

The points run in a seeded random order, the baseline before the first, after every
``baseline_every`` points and at the end. The points already in the journal's latest
round (those that could not be evaluated too, unless ``retry_failed``) are not measured
again, so a killed sweep run again goes on from where it stopped.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from typing import Any

from podium.errors import UsageError
from submission.sweep.space import BASELINE, Knob, Point, canonical
from submission.sweep.strategy import Measurements


def grid(knobs: list[Knob], base: dict[str, Any]) -> list[Point]:
    """Every combination of the knobs' values, minus those that are the base config itself
    (the baseline is measured anyway) and duplicates (two changes with one config)."""
    if not knobs:
        raise UsageError(
            "a sweep needs at least one --knob", hint="e.g. --knob SLIDING_WINDOW=16,32"
        )
    names = [k.name for k in knobs]
    if len(set(names)) != len(names):
        raise UsageError(f"--knob names a knob twice: {', '.join(names)}")
    seen, points = {canonical(base)}, []
    for combo in itertools.product(*(k.values() for k in knobs)):
        point = Point.of(dict(zip(names, combo, strict=True)))
        config = canonical(point.config(base))
        if config not in seen:
            seen.add(config)
            points.append(point)
    return points


def order(points: list[Point], seed: int) -> list[Point]:
    """The points in a seeded random order: neither the grid's order nor a knob's value
    lines up with the time of day (or with a neighbour's load)."""
    shuffled = sorted(points, key=lambda p: p.key)
    random.Random(seed).shuffle(shuffled)
    return shuffled


def schedule(points: list[Point], *, baseline_every: int, start_with_baseline: bool) -> list[Point]:
    """The measurements in order: the baseline before the first point (unless the last
    measurement already was one), after every ``baseline_every`` points, and at the end."""
    if baseline_every < 1:
        raise UsageError("--baseline-every must be at least 1")
    plan: list[Point] = [BASELINE] if start_with_baseline and points else []
    for i, point in enumerate(points, start=1):
        plan.append(point)
        if i % baseline_every == 0 or i == len(points):
            plan.append(BASELINE)
    return plan


@dataclass(frozen=True)
class Grid:
    """The ``Strategy`` without ``--search``."""

    knobs: list[Knob]
    seed: int = 0
    baseline_every: int = 1
    retry_failed: bool = False

    def measure(self, sweep: Measurements) -> None:
        points = order(grid(self.knobs, sweep.base), self.seed)
        for point in points:
            sweep.check(point)
        done = sweep.journal.done("point", retry_failed=self.retry_failed)
        todo = [p for p in points if p.key not in done]
        need_baseline = "baseline" not in {m.role for m in sweep.journal.in_round()}
        plan = schedule(todo, baseline_every=self.baseline_every, start_with_baseline=True)
        if not plan and need_baseline:
            plan = [BASELINE]
        sweep.plan(len(plan), len(points) - len(todo))
        for point in plan:
            sweep.run(point, "baseline" if point == BASELINE else "point")
