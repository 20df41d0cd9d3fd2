"""The answer of a sweep, as pure functions of its measurements.

- Each point's TPS is also read relative to the baseline measured beside it (the mean of
  the nearest baseline measurement before it and the nearest after it), so a machine that
  got slower halfway through the sweep does not favour the points measured first.
- The Pareto front: the points that pass every check and that no other passing point
  beats on both relative TPS (higher) and PPL (lower).
- The margin: the public PPL a self-check measures is not the held-out PPL the cap is
  judged on. The margin is the largest rise from public to held-out PPL among the front's
  points measured on both (never below 0), or a value given by the participant.
- The recommendation: the fastest passing point whose public PPL is at most
  ``cap - margin``; the baseline itself when no point beats it.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from submission.sweep.journal import Measurement
from submission.sweep.space import BASELINE, Point


@dataclass(frozen=True)
class Candidate:
    """One point of the sweep (the baseline included) with its latest measurement."""

    point: str
    changes: dict[str, Any]
    label: str
    verdict: str
    passed: bool
    ppl: float | None
    tps: float | None
    rel: float | None
    rel_ci95: list[float] | None
    tps_ci95: list[float] | None
    failing: list[str]
    reason: str
    measurements: int
    heldout_ppl: float | None = None
    heldout_verdict: str | None = None
    heldout_failing: list[str] = field(default_factory=list)

    @property
    def is_baseline(self) -> bool:
        return not self.changes

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Margin:
    value: float
    source: str  # heldout | given | none
    pairs: list[dict[str, Any]]
    lines: list[str]


@dataclass(frozen=True)
class Answer:
    cap: float | None
    candidates: list[Candidate]
    front: list[str]
    margin: Margin
    limit: float | None
    recommended: str | None
    drift: dict[str, Any]
    lines: list[str]

    def candidate(self, point: str | None) -> Candidate | None:
        return next((c for c in self.candidates if c.point == point), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cap": self.cap,
            "front": self.front,
            "margin": asdict(self.margin),
            "limit": self.limit,
            "recommended": self.recommended,
            "drift": self.drift,
            "arithmetic": self.lines,
            "points": [c.to_dict() for c in self.candidates],
        }


def neighbour_baseline(measurements: list[Measurement], seq: int) -> float | None:
    """The mean TPS of the nearest baseline measured before ``seq`` and the nearest after."""
    timed = [m for m in measurements if m.role == "baseline" and m.tps]
    before = [m for m in timed if m.seq < seq]
    after = [m for m in timed if m.seq > seq]
    near = ([before[-1]] if before else []) + ([after[0]] if after else [])
    return statistics.fmean(m.tps for m in near if m.tps) if near else None


def relative(m: Measurement, measurements: list[Measurement]) -> tuple[float | None, list | None]:
    ref = neighbour_baseline(measurements, m.seq)
    if not ref or not m.tps:
        return None, None
    ci = [v / ref for v in m.tps_ci95] if m.tps_ci95 else None
    return m.tps / ref, ci


def latest(measurements: list[Measurement], role: str) -> dict[str, Measurement]:
    out: dict[str, Measurement] = {}
    for m in sorted(measurements, key=lambda m: m.seq):
        if m.role == role:
            out[m.key] = m
    return out


def candidates(measurements: list[Measurement]) -> list[Candidate]:
    """Every point once (its latest measurement), the baseline first (pooled: the median
    of its measurements, relative TPS 1 by definition)."""
    ordered = sorted(measurements, key=lambda m: m.seq)
    heldout = latest(ordered, "heldout")
    out: list[Candidate] = []
    baselines = [m for m in ordered if m.role == "baseline"]
    if baselines:
        last = baselines[-1]
        tps = [m.tps for m in baselines if m.tps]
        out.append(
            _candidate(
                last,
                heldout,
                tps=statistics.median(tps) if tps else None,
                rel=1.0 if tps else None,
                rel_ci=None,
                n=len(baselines),
                passed=last.passed,
            )
        )
    for key, m in latest(ordered, "point").items():
        if key == BASELINE.key:
            continue
        rel, ci = relative(m, ordered)
        n = sum(1 for x in ordered if x.role == "point" and x.key == key)
        out.append(_candidate(m, heldout, tps=m.tps, rel=rel, rel_ci=ci, n=n, passed=m.passed))
    return out


def _candidate(
    m: Measurement,
    heldout: dict[str, Measurement],
    *,
    tps: float | None,
    rel: float | None,
    rel_ci: list[float] | None,
    n: int,
    passed: bool,
) -> Candidate:
    h = heldout.get(m.key)
    pooled = n > 1 and m.role == "baseline"
    return Candidate(
        point=m.point,
        changes=m.changes,
        label=Point.of(m.changes).label(),
        verdict=m.verdict,
        passed=passed,
        ppl=m.ppl,
        tps=tps,
        rel=rel,
        rel_ci95=rel_ci,
        tps_ci95=None if pooled else m.tps_ci95,
        failing=m.failing,
        reason=m.reason,
        measurements=n,
        heldout_ppl=h.ppl if h else None,
        heldout_verdict=h.verdict if h else None,
        heldout_failing=h.failing if h else [],
    )


def pareto_front(points: list[tuple[str, float, float]]) -> list[str]:
    """Ids of the non-dominated ``(id, tps, ppl)``: higher TPS, lower PPL; by PPL."""
    front: list[str] = []
    best = float("-inf")
    for pid, tps, _ppl in sorted(points, key=lambda p: (p[2], -p[1])):
        if tps > best:
            front.append(pid)
            best = tps
    return front


def measured_margin(pairs: list[tuple[str, float, float]], *, failed: int = 0) -> Margin:
    """``pairs``: (label, public PPL, held-out PPL). The largest rise, never below 0.

    ``failed``: held-out runs of the front that could not be evaluated; with no pair, the
    margin is unknown and taken as 0, which the line says (with what to do about it)."""
    if not pairs:
        why = (
            f"{failed} held-out run(s) of the front FAILED: rerun with --retry-failed, "
            "or give --margin"
            if failed
            else "no point was measured on the held-out set"
        )
        return Margin(0.0, "none", [], [f"margin = 0, unknown ({why})"])
    rises = [(label, pub, held, held - pub) for label, pub, held in pairs]
    lines = ["the front's PPL, public and held-out:"] + [
        f"  {label}: held-out {held:.4f} - public {pub:.4f} = {d:+.4f}"
        for label, pub, held, d in rises
    ]
    top = max(d for *_, d in rises)
    value = max(0.0, top)
    lines.append(f"margin = max(0, max of {len(rises)} rise(s)) = max(0, {top:+.4f}) = {value:.4f}")
    docs = [
        {"point": label, "public": pub, "heldout": held, "rise": d} for label, pub, held, d in rises
    ]
    return Margin(value, "heldout", docs, lines)


def given_margin(value: float) -> Margin:
    return Margin(value, "given", [], [f"margin = {value:.4f} (given with --margin)"])


def drift(measurements: list[Measurement]) -> dict[str, Any]:
    tps = [
        m.tps for m in sorted(measurements, key=lambda m: m.seq) if m.role == "baseline" and m.tps
    ]
    if not tps:
        return {"baseline_tps": []}
    return {
        "baseline_tps": [round(v, 2) for v in tps],
        "min": min(tps),
        "max": max(tps),
        "spread": (max(tps) - min(tps)) / statistics.median(tps),
    }


def answer(measurements: list[Measurement], cap: float | None, margin: Margin) -> Answer:
    cands = candidates(measurements)
    usable = [c for c in cands if c.passed and c.ppl is not None and c.rel is not None]
    front = pareto_front([(c.point, float(c.rel), float(c.ppl)) for c in usable])  # type: ignore[arg-type]
    limit = cap - margin.value if cap is not None else None
    lines = list(margin.lines)
    if cap is not None and limit is not None:
        lines.append(f"limit = cap - margin = {cap:.4f} - {margin.value:.4f} = {limit:.4f}")
    inside = [c for c in usable if limit is None or float(c.ppl) <= limit]  # type: ignore[arg-type]
    best = max(inside, key=lambda c: (c.rel, -float(c.ppl)), default=None)  # type: ignore[arg-type]
    if best is not None:
        lines.append(
            f"recommended: {best.label}, public PPL {best.ppl:.4f} <= {limit:.4f}, "
            f"{best.rel:.3f}x the baseline's TPS"
            if limit is not None
            else f"recommended: {best.label}"
        )
        if best.heldout_verdict is not None and best.heldout_ppl is not None:
            lines.append(
                f"its held-out run (the pipeline of podium verify): {best.heldout_verdict}, "
                f"PPL {best.heldout_ppl:.4f}" + (f" (cap {cap:.4f})" if cap is not None else "")
            )
    else:
        lines.append("recommended: none (no point passed every check within the limit)")
    return Answer(
        cap=cap,
        candidates=cands,
        front=front,
        margin=margin,
        limit=limit,
        recommended=best.point if best else None,
        drift=drift(measurements),
        lines=lines,
    )
