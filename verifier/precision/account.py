"""The accounting of a public report: ``engine_bits``, an upper bound of the bits an engine
could choose in it, read from its own fields and the grids they are on."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from schemas.check_ids import CATALOG
from verifier.precision.grids import (
    CI_GRID,
    FAILURE_NUMBER_BITS,
    PUBLICATION_BITS,
    TPS_VALUES,
    ci_public,
    finished_public,
    finished_values,
    ppl_values,
    speedup_public,
)
from verifier.precision.words import (
    BLIND_STAGES,
    FROM_STATUSES,
    STAGE_NAMES,
    blind,
    blind_finding,
    catalogue_order,
    numbers_in,
    public_text,
)


@dataclass
class Bits:
    """The engine-chosen bits of one public report, field by field."""

    numbers: dict[str, float] = field(default_factory=dict)
    outcome: dict[str, float] = field(default_factory=dict)
    #: numeric members the accountant knows no grid for (each counted as 64 bits)
    unaccounted: list[str] = field(default_factory=list)

    @property
    def number_bits(self) -> float:
        return sum(self.numbers.values())

    @property
    def outcome_bits(self) -> float:
        return sum(self.outcome.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "numbers": {k: round(v, 2) for k, v in self.numbers.items()},
            "number_bits": round(self.number_bits, 2),
            "outcome": {k: round(v, 2) for k, v in self.outcome.items()},
            "outcome_bits": round(self.outcome_bits, 2),
            "unaccounted": list(self.unaccounted),
        }


#: numeric members that hold what the verifier, the spec or the participant fixed before
#: the engine saw any held-out data (prefixes of member paths); ``metrics.ppl.tokens`` and
#: ``records`` are the records the procedure sent, never how many the engine answered
#: well (``scored_tokens``, ``scored_records``: the evidence's, 64 bits here if present)
_FIXED = (
    "schema_version",
    "submission.",
    "image.",
    "environment.",
    "heldout.",
    "metrics.ppl.cap",
    "metrics.ppl.tokens",
    "metrics.ppl.records",
    "metrics.tps.tokens_per_trial",
    "metrics.tps.concurrency",
    "metrics.tps.max_tokens",
    "metrics.tps.distinct_prompts",
    "metrics.reported_tps",
    "metrics.baseline_tps",
)


def _leaves(value: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _leaves(v, f"{path}.{k}" if path else k)]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _leaves(v, f"{path}[{i}]")]
    return [(path, value)]


def _numbers(doc: dict[str, Any], bits: Bits) -> None:
    metrics = doc.get("metrics") or {}
    ppl, tps = metrics.get("ppl") or {}, metrics.get("tps") or {}
    median = tps.get("median")
    derived: dict[str, Any] = {}
    if "value" in ppl:
        bits.numbers["metrics.ppl.value"] = math.log2(ppl_values(ppl.get("cap")))
    if isinstance(median, (int, float)):
        bits.numbers["metrics.tps.median"] = math.log2(TPS_VALUES)
        ci = tps.get("ci95")
        on_grid = [g for g in CI_GRID if ci_public(median, g) == ci]
        if on_grid and isinstance(ci, list):
            bits.numbers["metrics.tps.ci95"] = math.log2(len(CI_GRID))
            derived["metrics.tps.ci95[0]"], derived["metrics.tps.ci95[1]"] = ci
    if "speedup" in metrics:
        derived["metrics.speedup"] = speedup_public(median, metrics.get("baseline_tps"))
    stages = doc.get("stages") or []
    for path, value in _leaves(doc, ""):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if path in derived and derived[path] == value:
            continue
        if path in bits.numbers or path.startswith(_FIXED):
            continue
        m = re.fullmatch(r"stages\[(\d+)\]\.seconds", path)
        if m and stages[int(m.group(1))].get("name") in BLIND_STAGES:
            continue
        bits.unaccounted.append(path)
        bits.numbers[path] = 64.0


def _texts(doc: dict[str, Any], bits: Bits) -> None:
    metrics = doc.get("metrics") or {}
    for i, c in enumerate(doc.get("checks") or []):
        if not blind(c["id"]) and c["summary"] != public_text(c["id"], c["status"], metrics):
            bits.unaccounted.append(f"checks[{i}].summary")
            bits.numbers[f"checks[{i}].summary"] = 64.0
    judged = [
        f["check_id"]
        for f in doc.get("findings") or []
        if not (blind_finding(f) or f["check_id"] in FROM_STATUSES)
    ]
    if judged != sorted(judged, key=lambda c: (catalogue_order(c), c)) or len(set(judged)) < len(
        judged
    ):
        bits.unaccounted.append("findings (order)")
        bits.numbers["findings (order)"] = 64.0
    for i, f in enumerate(doc.get("findings") or []):
        if f["check_id"] in FROM_STATUSES and numbers_in(f["message"]):
            bits.numbers[f"findings[{i}].message"] = numbers_in(f["message"]) * FAILURE_NUMBER_BITS
        if blind_finding(f) or f["check_id"] in FROM_STATUSES:
            continue
        where = f.get("where") not in (None, "runtime")
        if f["message"] != public_text(f["check_id"], "fail", metrics) or where:
            bits.unaccounted.append(f"findings[{i}].message")
            bits.numbers[f"findings[{i}].message"] = 64.0
        if f.get("hint") and numbers_in(f["hint"]):
            bits.numbers[f"findings[{i}].hint"] = numbers_in(f["hint"]) * FAILURE_NUMBER_BITS
    for i, s in enumerate(doc.get("stages") or []):
        if s["name"] not in BLIND_STAGES and numbers_in(s.get("note") or ""):
            bits.numbers[f"stages[{i}].note"] = numbers_in(s["note"]) * FAILURE_NUMBER_BITS
    failure = doc.get("failure")
    if isinstance(failure, dict) and failure.get("stage") not in BLIND_STAGES:
        n = numbers_in(failure["message"])
        if n:
            bits.numbers["failure.message"] = n * FAILURE_NUMBER_BITS


def _outcome(doc: dict[str, Any], bits: Bits, rules: int) -> None:
    bits.outcome["verdict"] = 2.0
    judged = [c for c in doc.get("checks") or [] if not blind(c["id"])]
    if judged:
        bits.outcome["checks (status)"] = 2.0 * len(judged)
    raised = {f["check_id"] for f in doc.get("findings") or [] if not blind_finding(f)}
    if raised:
        # of the ids judged after the first held-out request, and the challenge's rules
        judged_ids = [i for i in CATALOG if not blind(i)]
        bits.outcome["findings (which)"] = len(raised) * math.log2(len(judged_ids) + rules + 1)
    post = [s for s in doc.get("stages") or [] if s["name"] not in BLIND_STAGES]
    bits.outcome["stages (all ok or not)"] = 1.0
    if any(s["status"] != "ok" for s in post):
        bits.outcome["stages (status)"] = len(post) * math.log2(3)
    if doc.get("failure"):
        bits.outcome["failure (stage)"] = math.log2(len(STAGE_NAMES))


def engine_bits(doc: dict[str, Any], *, evaluation_s: float, rules: int = 0) -> Bits:
    """An upper bound of the bits the engine chose in the public report ``doc``, for a
    challenge whose evaluation is limited to ``evaluation_s`` and that forbids ``rules``
    settings: see the module docstring and ``docs/measurement.md`` for what is counted
    and how."""
    bits = Bits()
    _numbers(doc, bits)
    bits.numbers["finished"] = math.log2(finished_values(evaluation_s))
    if doc.get("finished") != finished_public(doc["finished"], doc["started"]):
        bits.unaccounted.append("finished")
        bits.numbers["finished"] = 64.0
    # the grid point its publication is held to: the one after ``finished``, or the next
    # where the verifier's own work after the run passed it (``verifier.scale.queue.hold``)
    bits.numbers["publication"] = PUBLICATION_BITS
    _texts(doc, bits)
    _outcome(doc, bits, rules)
    return bits
