"""What a public report may say about what the engine did, and how many bits that is.

An engine that has seen held-out text can try to carry it out in anything it influences:
the low bits of a log-probability, the time it takes, which check it makes fail. The
signed report is read by participants and the public, so it says each engine-made number
only at the precision its meaning needs, and nothing per record, per answer, per probe or
per trial; the organizer's evidence beside it (``organizer/evidence.json``) keeps every
value and every check's own words.

``public_report`` is that projection of the full document (the one ``verifier.report``
builds), and ``engine_bits`` its accounting: an upper bound of the bits an engine can
choose in a public report, read from the report's own fields and the grids they are on.
Two sums, because they are of two kinds:

- **numbers** (``NUMBER_BITS`` at most, checked on every report before it is signed):
  the PPL, the TPS, its interval, the time the run finished, and any number left in a
  failure's message. Each costs log2 of the number of values its grid allows over its
  range, however the engine picks among them;
- **outcome**: the verdict, each judged check's status, which findings were raised, the
  stage a run failed at. A reader needs them all; they are counted, not rounded away.

What the engine could not have influenced with held-out knowledge costs nothing: the
participant's own bundle and claims, the machine's fingerprint, everything measured before
the engine got its first held-out request (the stages up to ``ready``), the spec, the
seeds and the held-out set's digests. Numbers derived from public values alone (the
speed-up, the interval's ends) cost nothing either: the accountant recomputes them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from schemas.check_ids import (
    CATALOG,
    PPL_CAP,
    REFERENCE_SELF_TEST,
    TPS_PROMPT_MISMATCH,
    TPS_REPRODUCTION,
    TPS_UNSTABLE,
    VERDICT_CHECKS_MISSING,
    declared,
)

#: the bound on the number bits one public report may carry (checked before signing)
NUMBER_BITS = 32.0

#: phases whose ids are emitted before the engine sees anything held out: kept verbatim
BLIND_PHASES = frozenset({"submission", "intake", "environment", "rebuild"})
#: checks made by the verifier alone, on its own machine, before any held-out request
VERIFIER_CHECKS = frozenset({REFERENCE_SELF_TEST})
#: stages that end before the engine's first held-out request: their seconds are kept
BLIND_STAGES = frozenset(
    {
        "intake",
        "environment",
        "data",
        "weights",
        "rebuild",
        "start",
        "tokenizer",
        "reference-load",
        "isolation",
        "ready",
    }
)
#: every stage name a report can have (the failure's stage is one of them)
STAGE_NAMES = BLIND_STAGES | {
    "evaluation",
    "checks",
    "harness",
    "runtime",
    "stop",
    "cleanup",
    "reference",
    "reference-engine",
    "teardown",
    "verdict",
    "run",
}

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
#: the numbers of a failure's message: integers under 1000 as they are, others to one
#: significant digit (marked ``~``), as many as the report's budget leaves, the rest
#: ``...``; one costs log2 of 1000 integers and the 1-digit values from 1 to 1e12
FAILURE_NUMBER_BITS = math.log2(1000 + 9 * 12)
#: findings the verdict words from the checks' public statuses alone (kept as they are)
FROM_STATUSES = frozenset({VERDICT_CHECKS_MISSING})

_NUMBER = re.compile(r"(?<![\w.])(?<!HTTP/)\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
_TIME = "%Y-%m-%dT%H:%M:%S.%fZ"
_STATUS_WORDS = {
    "pass": "",
    "fail": "does not hold: ",
    "skip": "not judged: ",
    "error": "could not be judged: ",
}


# -- grids ---------------------------------------------------------------------------------


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


# -- texts -----------------------------------------------------------------------------------


def _phase(check_id: str) -> str:
    info = declared(check_id)
    return info.phase if info is not None else "intake"  # a challenge's forbidden rule


def blind(check_id: str) -> bool:
    """Whether ``check_id``'s words are made before any held-out request (kept verbatim)."""
    return check_id in VERIFIER_CHECKS or _phase(check_id) in BLIND_PHASES


def blind_finding(finding: dict[str, Any]) -> bool:
    """Whether a finding's words are made before any held-out request: its id's phase is,
    and it is not a challenge rule seen in what the engine reported at run time."""
    return blind(finding["check_id"]) and finding.get("where") != "runtime"


def _fmt(x: float | None) -> str:
    return "undefined" if x is None else f"{x:g}"


def headline(check_id: str, status: str, metrics: dict[str, Any]) -> str | None:
    """The words of the two checks a reader reads numbers in, from public values only."""
    ppl = metrics.get("ppl") or {}
    tps = metrics.get("tps") or {}
    if check_id == PPL_CAP and status in ("pass", "fail") and "cap" in ppl:
        op = "<=" if status == "pass" else ">"
        return f"PPL {_fmt(ppl.get('value'))} {op} cap {ppl['cap']:g}"
    reported = metrics.get("reported_tps")
    if check_id == TPS_REPRODUCTION and status in ("pass", "fail") and reported:
        word = "within" if status == "pass" else "not within"
        return (
            f"blind median TPS {_fmt(tps.get('median'))} is {word} the challenge's tolerance "
            f"of the reported {reported:g}"
        )
    return None


#: what a check holds when it passes, where the catalogue's line names the violation
CLAIMS = {
    TPS_UNSTABLE: "the timed trials agree within the challenge's bound",
    TPS_PROMPT_MISMATCH: "the prompt ids the engine reports are the verifier's own rendering",
}


def public_text(check_id: str, status: str, metrics: dict[str, Any]) -> str:
    """What the public report says for a judged check or finding: the headline's numbers,
    or the catalogue's one line with the status's word (never the check's own words)."""
    said = headline(check_id, status, metrics)
    if said is not None:
        return said
    info = declared(check_id)
    if info is None:  # a challenge's rule, seen in what the engine ran with
        return "the engine ran with a setting the challenge forbids"
    if not info.check:  # a finding's doc names the violation itself
        return info.doc
    return _STATUS_WORDS.get(status, f"{status}: ") + CLAIMS.get(check_id, info.doc)


def _round_number(token: str) -> str:
    x = float(token)
    if x == int(x) and abs(x) < 1000:
        return str(int(x))
    return "~" + f"{significant(x, 1):g}"


def rounded_message(text: str, keep: int) -> str:
    """``text`` with its first ``keep`` numbers rounded, the rest ``...``."""
    seen = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal seen
        seen += 1
        return _round_number(m.group(0)) if seen <= keep else "..."

    return _NUMBER.sub(sub, text)


def numbers_in(text: str) -> int:
    return len(_NUMBER.findall(text))


# -- the projection ----------------------------------------------------------------------------


def _public_metrics(metrics: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    ppl = metrics.get("ppl")
    if isinstance(ppl, dict):
        cap = ppl.get("cap")
        out["ppl"] = {k: ppl[k] for k in ("cap", "tokens", "records") if k in ppl}
        if "value" in ppl:
            out["ppl"]["value"] = ppl_public(ppl["value"], cap)
    elif "ppl" in metrics:
        out["ppl"] = None
    tps = metrics.get("tps")
    median: float | None = None
    if isinstance(tps, dict):
        kept = ("tokens_per_trial", "concurrency", "max_tokens", "distinct_prompts")
        out["tps"] = {k: tps[k] for k in kept if k in tps}
        if isinstance(tps.get("median"), (int, float)):
            median = tps_public(float(tps["median"]))
            out["tps"]["median"] = median
            ci = tps.get("ci95")
            if isinstance(ci, list) and len(ci) == 2 and all(v is not None for v in ci):
                out["tps"]["ci95"] = ci_public(median, half_width(median, ci))
    elif "tps" in metrics:
        out["tps"] = None
    for k in ("reported_tps", "baseline_tps"):
        if k in metrics:
            out[k] = metrics[k]
    if "speedup" in metrics:
        out["speedup"] = speedup_public(median, metrics.get("baseline_tps"))
    return out


def _order(check_id: str) -> int:
    """Where an id stands in the catalogue (a challenge's rules after every declared id)."""
    return _ORDER.get(check_id, len(_ORDER))


_ORDER = {cid: i for i, cid in enumerate(CATALOG)}


def _public_findings(findings: list[dict[str, Any]], metrics: dict[str, Any]) -> list[Any]:
    """Findings made before the first held-out request as they are, in their order; the
    rest once per id, in the catalogue's order (the order they fired in is the engine's
    to choose), in podium's words."""
    out, seen, judged = [], set(), []
    for f in findings:
        cid = f["check_id"]
        if blind_finding(f) or cid in FROM_STATUSES:
            out.append(dict(f))
            continue
        if cid in seen:  # how many times it fired is the engine's to choose
            continue
        seen.add(cid)
        hint = f.get("hint")
        judged.append(
            {
                "check_id": cid,
                "severity": f["severity"],
                "message": public_text(cid, "fail", metrics),
                "hint": hint if hint and not numbers_in(hint) else None,
                # "runtime" (podium's word) tells a rule seen at run time from one at intake
                "where": "runtime" if f.get("where") == "runtime" else None,
            }
        )
    return out + sorted(judged, key=lambda f: (_order(f["check_id"]), f["check_id"]))


def _public_stages(stages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for s in stages:
        if s["name"] in BLIND_STAGES:
            out.append(dict(s))
            continue
        stage = {"name": s["name"], "status": s["status"]}
        if s.get("note") and not numbers_in(s["note"]) and s["status"] != "failed":
            stage["note"] = s["note"]
        out.append(stage)
    return out


def public_report(full: dict[str, Any], *, evaluation_s: float) -> dict[str, Any]:
    """The public projection of a full report document (``report_id`` left to the builder)
    of a challenge whose evaluation is limited to ``evaluation_s``: every engine-made number
    on its grid, no check's details, no check's own words for what it judged after the
    engine saw held-out data, no runtime counters; a failure's message keeps the numbers
    the budget leaves room for."""
    metrics = _public_metrics(full.get("metrics") or {})
    doc = {k: v for k, v in full.items() if k not in ("runtime", "signature")}
    doc["kind"] = "podium.report"
    doc["metrics"] = metrics
    doc["checks"] = [
        {
            "id": c["id"],
            "status": c["status"],
            "summary": c["summary"]
            if blind(c["id"])
            else public_text(c["id"], c["status"], metrics),
        }
        for c in full.get("checks") or []
    ]
    doc["findings"] = _public_findings(full.get("findings") or [], metrics)
    doc["stages"] = _public_stages(full.get("stages") or [])
    doc["finished"] = finished_public(full["finished"], full["started"])
    failure = full.get("failure")
    if isinstance(failure, dict) and failure.get("stage") not in BLIND_STAGES:
        doc["failure"] = {
            "stage": failure["stage"],
            "message": rounded_message(failure["message"], 0),
        }
        spent = engine_bits(doc, evaluation_s=evaluation_s).number_bits
        keep = max(0, math.floor((NUMBER_BITS - spent) / FAILURE_NUMBER_BITS + 1e-9))
        doc["failure"]["message"] = rounded_message(failure["message"], keep)
    return doc


# -- the accounting -------------------------------------------------------------------------


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
#: the engine saw any held-out data (prefixes of member paths)
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
    if judged != sorted(judged, key=lambda c: (_order(c), c)) or len(set(judged)) < len(judged):
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
    _texts(doc, bits)
    _outcome(doc, bits, rules)
    return bits
