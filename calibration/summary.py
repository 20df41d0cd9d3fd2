"""One calibration row's summary: the numbers of its verification report, and whether
they meet what the row's kind must show (``expectation``)."""

from __future__ import annotations

import re
from typing import Any

from calibration.margins import positions
from calibration.rows import Row


def _in_repo(value: str) -> str:
    """A path inside podium's checkout as the checkout names it (results name no machine)."""
    from bench.common import REPO_ROOT

    root = f"{REPO_ROOT}/"
    return value.removeprefix(root)


DECODE = "integrity.reference-decode"
CACHING = "integrity.caching"
SAME_PATH = "integrity.same-path"
UNSTABLE = "tps.unstable"

#: tiny's cap, as a ratio to the model's PPL, and the decode ratio from which a decode
#: lossier than its scoring must always be REJECTED (a window of 10 and below)
CAP_RATIO = 1.05
PAST_THE_CAP = 1.07


def _check(report: dict[str, Any], check_id: str) -> dict[str, Any] | None:
    return next((c for c in report.get("checks", []) if c.get("id") == check_id), None)


def summarise(
    row: Row,
    report: dict[str, Any],
    *,
    model_ppl: float,
    cap: float,
    wall_s: float | None = None,
    stats: dict[str, int] | None = None,
    log: str = "",
) -> dict[str, Any]:
    """One table row from a verification report (``log``: the engine's): the numbers
    and whether they meet the expectation of the row's kind."""
    metrics = report.get("metrics") or {}
    ppl_value = (metrics.get("ppl") or {}).get("value")
    ppl = float(ppl_value) if ppl_value is not None else None
    tps = (metrics.get("tps") or {}).get("median")
    errors = sorted(
        {f["check_id"] for f in report.get("findings", []) if f.get("severity") == "error"}
    )
    caching = _check(report, CACHING) or {}
    out: dict[str, Any] = {
        "name": row.name,
        "kind": row.kind,
        "engine": row.engine,
        "config": dict(row.config),
        "env": {k: _in_repo(v) for k, v in row.env.items()},
        "verdict": report.get("verdict"),
        "judged": _judged(report, errors, caching),
        "caching_status": caching.get("status"),
        "errors": errors,
        "failure": (report.get("failure") or {}).get("message") if report.get("failure") else None,
        "failure_stage": (report.get("failure") or {}).get("stage"),
        "refusal": refusal(report, log) if row.vllm else None,
        "vllm": row.vllm,
        "ppl": ppl,
        "ppl_ratio": ppl / model_ppl if ppl is not None else None,
        "engine_ppl": (metrics.get("ppl") or {}).get("engine_value", ppl),
        "tps": float(tps) if tps is not None else None,
        **_decode(report),
        "wall_s": wall_s,
        "cheat_stats": stats,
        "replays": row.replays,
        "no_repeat": caching.get("status") == "pass"
        and "no timed request repeats" in str(caching.get("summary", "")),
    }
    out["bounds"] = positions(report)
    out["decode_ratio"] = row.decode_ratio
    out["mean_self_gap"] = ((_check(report, SAME_PATH) or {}).get("details") or {}).get(
        "mean_self_gap"
    )
    out["expected"], out["meets"] = expectation(out, cap)
    out["noise_only"] = _noise_only(out, errors, cap)
    return out


def _judged(report: dict[str, Any], errors: list[str], caching: dict[str, Any]) -> Any:
    """The report's verdict, or VERIFIED where only the caching skip kept it UNOFFICIAL."""
    missing = [
        f for f in report.get("findings", []) if f.get("check_id") == "verdict.checks-missing"
    ]
    # At this commit integrity.caching skips when no timed prompt repeats ("a replay is
    # impossible"), and the verdict counts a skipped required check as missing: such a
    # run ends UNOFFICIAL. ``judged`` is the verdict with that one skip counted as a pass.
    caching_only = bool(missing) and all(
        f.get("message", "").endswith(f": {CACHING}") for f in missing
    )
    judged_verdict = report.get("verdict")
    if (
        judged_verdict == "UNOFFICIAL"
        and caching_only
        and caching.get("status") == "skip"
        and not errors
    ):
        judged_verdict = "VERIFIED"
    return judged_verdict


def _decode(report: dict[str, Any]) -> dict[str, Any]:
    """The reference decode's gaps and allowances, as the summary's fields."""
    decode = _check(report, DECODE)
    details = (decode or {}).get("details") or {}
    allowance = details.get("allowance") or {}
    reference_model = details.get("reference_model") or {}
    return {
        "decode_status": (decode or {}).get("status"),
        "mean_gap": details.get("mean_gap"),
        "worst_answer_gap": (details.get("worst_answer") or {}).get("mean_gap"),
        "large_gap_share": details.get("large_gap_share"),
        "tokens": details.get("tokens"),
        "allowance": {
            "excess": details.get("reported_scoring_loss"),
            **{k: allowance.get(k) for k in ("mean", "answer", "large_share", "budget", "rule")},
        },
        "reference_applied": reference_model.get("applied"),
        "reference_budgeted": reference_model.get("budgeted"),
    }


def _noise_only(out: dict[str, Any], errors: list[str], cap: float) -> bool:
    """An unstable clock is the machine's noise, not the trust checks' judgement: whether a
    row that misses its expectation would meet it from every other check, so a noisy row
    shows what it calibrates."""
    if out["meets"] or UNSTABLE not in errors:
        return False
    others = [e for e in errors if e != UNSTABLE]
    quiet = {**out, "errors": others, "judged": "REJECTED" if others else "VERIFIED"}
    return expectation(quiet, cap)[1]


def refusal(report: dict[str, Any], log: str = "") -> str | None:
    """vLLM's own root cause, when the engine exited before it was ready: the first
    ``...Error: ...`` of its whole log (else of the report's tail) that is neither a
    warning nor the engine core's "see root cause above"."""
    failure = report.get("failure") or {}
    if failure.get("stage") not in ("start", "ready"):
        return None
    for text in (log, str(failure.get("log_tail") or "")):
        for line in text.splitlines():
            found = re.search(r"\b(\w+Error: .*)", line)
            if found and "root cause above" not in line and "WARNING" not in line:
                return found.group(1).strip()[:300]
    return str(failure.get("message", ""))[:300]


def expectation(summary: dict[str, Any], cap: float) -> tuple[str, bool]:
    """What the row's kind must show, and whether it does."""
    verdict, errors, ppl = summary["judged"], set(summary["errors"]), summary["ppl"]
    stats = summary.get("cheat_stats") or {}
    nothing = stats.get("replayed_tokens") == 0 if stats else summary.get("no_repeat", False)
    if summary["kind"] == "cheat" and summary.get("replays") and nothing:
        # a replaying cheat on a stream with no repeat had nothing to replay: it computed
        # every token, so it is an honest engine and must be judged as one
        return "VERIFIED (nothing to replay)", verdict == "VERIFIED" and not errors
    decode_ratio = summary.get("decode_ratio")
    if summary["kind"] == "cheat" and decode_ratio is not None:
        # a decode lossier than its scoring: the budget rule judges the decode against the
        # cap itself, so one whose own model is inside the cap is permitted, one a whole
        # window step or more past it (W <= 10 on tiny) is not, and one step past it (W=12,
        # 1.065) sits inside the bound's resolution on 32-token answers
        if decode_ratio <= CAP_RATIO:
            return "VERIFIED (a decode inside the budget)", verdict == "VERIFIED" and not errors
        if decode_ratio < PAST_THE_CAP:
            return "either (one window step past the cap)", verdict in ("VERIFIED", "REJECTED")
    if summary["kind"] == "cheat":
        return "REJECTED", verdict == "REJECTED"
    if summary.get("refusal"):
        # vLLM's CPU build refused the option at start: no engine, nothing to judge
        return "not served (refused at start)", verdict == "FAILED"
    if ppl is not None and ppl > cap:
        # its decode is that of a model over the cap too, which the reference decode may
        # see beside the cap (the budget rule judges the decode against the cap itself)
        return "REJECTED by ppl.cap", (
            verdict == "REJECTED"
            and "ppl.cap" in errors
            and errors <= {"ppl.cap", "integrity.reference-decode"}
        )
    return "VERIFIED", verdict == "VERIFIED" and not errors
