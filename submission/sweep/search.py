"""``--search``: optuna chooses the points, within a budget of points or minutes.

The objective is the point's TPS relative to the baseline measured before it (so a
drifting machine does not mislead the sampler), maximised under one constraint: the point
passes every check, PPL cap included (optuna's constrained TPE sampler). Points already
in the sweep's file are told to the study before it asks for more, so a resumed search
goes on from where it stopped and never measures a point twice; a point optuna asks for
again gets its recorded value back without being measured.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from podium.errors import UsageError
from submission.sweep.answer import relative
from submission.sweep.journal import Measurement
from submission.sweep.space import BASELINE, Knob, Point, canonical
from submission.sweep.strategy import Measurements

#: asks in a row that only found measured points: the space is used up
MAX_REPEATS = 50
#: the one constraint: <= 0 when the point passed every check (PPL cap included)
CONSTRAINT = "passes"


@dataclass(frozen=True)
class Budget:
    """``--search N`` (points) or ``--search Nm`` (minutes of measuring)."""

    points: int | None = None
    minutes: float | None = None

    @classmethod
    def parse(cls, text: str) -> Budget:
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(m|min|minutes?)?\s*", text)
        if not m or float(m[1]) <= 0:
            raise UsageError(
                f"--search {text!r} is not a budget", hint="--search 12 (points) or --search 30m"
            )
        return cls(minutes=float(m[1])) if m[2] else cls(points=int(float(m[1])))


def distributions(knobs: list[Knob]) -> dict[str, Any]:
    import optuna.distributions as d

    out: dict[str, Any] = {}
    for k in knobs:
        if k.range is None:
            out[k.name] = d.CategoricalDistribution([canonical(v) for v in k.choices])
        elif k.range.is_int:
            step = int(k.range.step or 1)
            out[k.name] = d.IntDistribution(int(k.range.low), int(k.range.high), step=step)
        else:
            out[k.name] = d.FloatDistribution(k.range.low, k.range.high, step=k.range.step)
    return out


def _params(changes: dict[str, Any], dists: dict[str, Any]) -> dict[str, Any] | None:
    """A point's changes as the study's params; None when it lies outside the space."""
    import optuna.distributions as d

    if set(changes) != set(dists):
        return None
    params: dict[str, Any] = {}
    for name, dist in dists.items():
        value = changes[name]
        if isinstance(dist, d.CategoricalDistribution):
            value = canonical(value)
            if value not in dist.choices:
                return None
        elif not isinstance(value, int | float) or not dist.low <= value <= dist.high:
            return None
        params[name] = value
    return params


def _point(params: dict[str, Any], dists: dict[str, Any]) -> Point:
    import optuna.distributions as d

    return Point.of(
        {
            name: json.loads(v) if isinstance(dists[name], d.CategoricalDistribution) else v
            for name, v in params.items()
        }
    )


def objective(m: Measurement, all_: list[Measurement], cap: float | None) -> tuple[float, float]:
    """(relative TPS, constraint): the constraint is <= 0 for a point that passed."""
    rel, _ = relative(m, all_)
    if not m.passed or m.ppl is None:
        return rel or 0.0, 1.0
    return rel or 0.0, (m.ppl - cap) if cap is not None else 0.0


@dataclass(frozen=True)
class Search:
    """The ``Strategy`` of ``--search``: ``cap`` is the challenge's PPL cap (the constraint)."""

    knobs: list[Knob]
    budget: Budget
    cap: float | None
    seed: int = 0
    baseline_every: int = 1

    def measure(self, sweep: Measurements) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        dists = distributions(self.knobs)
        sampler = optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=4)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        journal = sweep.journal
        recorded: dict[str, tuple[float, float]] = {}
        for m in journal.in_round():
            params = _params(m.changes, dists) if m.role == "point" else None
            if params is None or m.key in recorded:
                continue
            recorded[m.key] = objective(m, journal.measurements, self.cap)
            value, constraint = recorded[m.key]
            study.add_trial(
                optuna.trial.create_trial(
                    params=params,
                    distributions=dists,
                    value=value,
                    constraints={CONSTRAINT: constraint},
                )
            )

        def left() -> bool:
            if self.budget.points is not None:
                return len(recorded) < self.budget.points
            return journal.spent_seconds() < (self.budget.minutes or 0) * 60

        if self.budget.points is not None:
            sweep.plan(max(0, self.budget.points - len(recorded)), 0)
        since_baseline, repeats = self.baseline_every, 0
        while left() and repeats < MAX_REPEATS:
            trial = study.ask(dists)
            point = _point(trial.params, dists)
            if point.config(sweep.base) == BASELINE.config(sweep.base):
                point = BASELINE
            if point.key in recorded or point == BASELINE:
                value, constraint = recorded.get(point.key, (1.0, 0.0))
                trial.set_constraint(CONSTRAINT, constraint)
                study.tell(trial, value)
                repeats += 1
                continue
            repeats = 0
            sweep.check(point)
            if since_baseline >= self.baseline_every:
                sweep.run(BASELINE, "baseline")
                since_baseline = 0
            m = sweep.run(point, "point")
            since_baseline += 1
            recorded[point.key] = objective(m, journal.measurements, self.cap)
            value, constraint = recorded[point.key]
            trial.set_constraint(CONSTRAINT, constraint)
            study.tell(trial, value)
        if journal.last_role() != "baseline":
            sweep.run(BASELINE, "baseline")
