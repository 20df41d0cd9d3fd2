"""What a public report may say in words: which checks, findings and stages were made
before the engine's first held-out request (kept as they are), the words of the rest (the
catalogue's, or a headline written from public values), and the numbers a failure's
message keeps."""

from __future__ import annotations

import re
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
from verifier.precision.grids import significant

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
#: findings the verdict words from the checks' public statuses alone (kept as they are)
FROM_STATUSES = frozenset({VERDICT_CHECKS_MISSING})

_NUMBER = re.compile(r"(?<![\w.])(?<!HTTP/)\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")
_STATUS_WORDS = {
    "pass": "",
    "fail": "does not hold: ",
    "skip": "not judged: ",
    "error": "could not be judged: ",
}


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


def catalogue_order(check_id: str) -> int:
    """Where an id stands in the catalogue (a challenge's rules after every declared id)."""
    return ORDER.get(check_id, len(ORDER))


ORDER = {cid: i for i, cid in enumerate(CATALOG)}
