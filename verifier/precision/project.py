"""The public projection of a full report document: ``public_report``."""

from __future__ import annotations

import math
from typing import Any

from verifier.precision.account import engine_bits
from verifier.precision.grids import (
    FAILURE_NUMBER_BITS,
    NUMBER_BITS,
    ci_public,
    finished_public,
    half_width,
    ppl_public,
    speedup_public,
    tps_public,
)
from verifier.precision.words import (
    BLIND_STAGES,
    FROM_STATUSES,
    blind,
    blind_finding,
    catalogue_order,
    numbers_in,
    public_text,
    rounded_message,
)


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
    return out + sorted(judged, key=lambda f: (catalogue_order(f["check_id"]), f["check_id"]))


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
