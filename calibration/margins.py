"""Trust margins: where each calibration row sits relative to each bound that judges it.

A *position* is a row's value at a bound divided by what the bound allows (1 is the
bound; above it the check fails). For a lower bound (the same-path fraction) it is the
share of tokens missed over the share allowed to miss. Pure functions of a verification
report, so a GPU driver that runs ``calibration.rows.margin_rows()`` reads its reports
with the same arithmetic:

    from calibration.rows import margin_rows
    from calibration.margins import positions, separation

Separation (the trust-margin target): every honest row inside the PPL cap at or below
``HONEST_MAX`` of every allowance; every double spender whose decode alone would break the
cap at or above ``SPENDER_MIN`` of at least one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from calibration import tiny_budget
from verifier.checks.budget import decode_allowances

#: honest rows inside the cap sit at or below this share of every allowance
HONEST_MAX = 0.5
#: a double spender over the cap sits at or above this multiple of some allowance
SPENDER_MIN = 1.5

#: the bounds, in the table's order: (key, what it is)
BOUNDS: dict[str, str] = {
    "decode_mean": "reference decode: mean gap / allowed mean",
    "decode_answer": "reference decode: worst answer's mean gap / allowed",
    "decode_large": "reference decode: share of tokens over 1 nat / allowed",
    "self_gap": "same path: mean self-gap / allowed",
    "same_path_miss": "same path: share not the engine's own top / allowed",
    "left_out": "same path: share leaving out the reference's top / allowed",
}


def _check(report: dict[str, Any], check_id: str) -> dict[str, Any]:
    found = next((c for c in report.get("checks", []) if c.get("id") == check_id), None)
    return (found or {}).get("details") or {}


def _ratio(value: Any, allowed: Any) -> float | None:
    if not isinstance(value, int | float) or not isinstance(allowed, int | float):
        return None
    if allowed <= 0:
        return 0.0 if value <= 0 else math.inf
    return float(value) / float(allowed)


def positions(report: dict[str, Any]) -> dict[str, float | None]:
    """Each bound's position for one verification report (None: not judged)."""
    decode = _check(report, "integrity.reference-decode")
    allowed = decode.get("allowance") or {}
    same = _check(report, "integrity.same-path")
    fraction, required = same.get("fraction"), same.get("required_fraction")
    miss = None
    if isinstance(fraction, int | float) and isinstance(required, int | float):
        miss = _ratio(1.0 - fraction, 1.0 - required)
    return {
        "decode_mean": _ratio(decode.get("mean_gap"), allowed.get("mean")),
        "decode_answer": _ratio(
            (decode.get("worst_answer") or {}).get("mean_gap"), allowed.get("answer")
        ),
        "decode_large": _ratio(decode.get("large_gap_share"), allowed.get("large_share")),
        "self_gap": _ratio(same.get("mean_self_gap"), same.get("max_mean_self_gap")),
        "same_path_miss": miss,
        "left_out": _ratio(
            same.get("reference_top_left_out"), same.get("max_reference_top_left_out")
        ),
    }


def at_rates(summary: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """``summary`` with its reference-decode positions recomputed from its recorded gaps and
    scoring loss e under ``settings`` (a spec's ``integrity.reference_decode``): how a run
    measured under earlier exchange rates sits under the rates shipped now. The same-path
    positions do not depend on those rates and are kept."""
    e = (summary.get("allowance") or {}).get("excess")
    if not isinstance(e, int | float):
        return summary
    bounds = dict(summary.get("bounds") or {})
    mean, answer, large_share = decode_allowances(tiny_budget(), settings)
    allowed = {"decode_mean": mean, "decode_answer": answer, "decode_large": large_share}
    recorded = {
        "decode_mean": summary.get("mean_gap"),
        "decode_answer": summary.get("worst_answer_gap"),
        "decode_large": summary.get("large_gap_share"),
    }
    for key, value in recorded.items():
        if value is not None:
            bounds[key] = _ratio(value, allowed[key])
    return {**summary, "bounds": bounds}


def inside_cap(summary: dict[str, Any], cap_ratio: float) -> bool:
    ratio = summary.get("ppl_ratio")
    return isinstance(ratio, int | float) and ratio <= cap_ratio


def over_cap_decode(summary: dict[str, Any], cap_ratio: float) -> bool:
    ratio = summary.get("decode_ratio")
    return isinstance(ratio, int | float) and ratio > cap_ratio


def separation(summaries: Sequence[dict[str, Any]], cap_ratio: float) -> dict[str, Any]:
    """Per bound: the highest position of an honest row inside the cap, the lowest of a
    double spender over it; and each spender's deciding bound (its highest position)."""
    honest = [s for s in summaries if s["kind"] == "honest" and inside_cap(s, cap_ratio)]
    spenders = [s for s in summaries if s["kind"] == "cheat" and over_cap_decode(s, cap_ratio)]

    def values(group: list[dict[str, Any]], key: str) -> list[float]:
        return [v for s in group if isinstance(v := (s.get("bounds") or {}).get(key), float)]

    per_bound = {}
    for key in BOUNDS:
        h, d = values(honest, key), values(spenders, key)
        per_bound[key] = {
            "honest_max": max(h, default=None),
            "spender_min": min(d, default=None),
            "spender_max": max(d, default=None),
        }
    deciding: dict[str, dict[str, Any]] = {}
    for s in spenders:
        bounds = {k: v for k, v in (s.get("bounds") or {}).items() if isinstance(v, float)}
        top = max(bounds, key=lambda k: bounds[k]) if bounds else None
        deciding[s["name"]] = {"bound": top, "position": bounds.get(top) if top else None}
    honest_worst = max(
        (v for s in honest for v in (s.get("bounds") or {}).values() if isinstance(v, float)),
        default=None,
    )
    spender_weakest = min(
        (d["position"] for d in deciding.values() if d["position"] is not None), default=None
    )
    return {
        "honest_rows": [s["name"] for s in honest],
        "spender_rows": [s["name"] for s in spenders],
        "per_bound": per_bound,
        "deciding": deciding,
        "honest_worst": honest_worst,
        "spender_weakest": spender_weakest,
        "honest_ok": honest_worst is not None and honest_worst <= HONEST_MAX,
        "spenders_ok": spender_weakest is not None and spender_weakest >= SPENDER_MIN,
    }


def _pos(value: Any) -> str:
    if value is None:
        return "–"
    return "inf" if math.isinf(value) else f"{value:.2f}"


def markdown_table(summaries: Sequence[dict[str, Any]], cap_ratio: float) -> str:
    """One line per margin row: its PPL ratio, its decode's ratio alone, each position."""
    head = (
        "| row | kind | knobs | PPL ratio | decode alone | "
        + " | ".join(f"`{k}`" for k in BOUNDS)
        + " | verdict | error ids |\n| --- | --- | --- | ---: | ---: | "
        + " | ".join("---:" for _ in BOUNDS)
        + " | --- | --- |\n"
    )
    lines = []
    for s in summaries:
        b = s.get("bounds") or {}
        knobs = ", ".join(f"`{k}={v}`" for k, v in s["env"].items())
        ratio = s.get("ppl_ratio")
        decode = s.get("decode_ratio")
        over = " (over the cap)" if over_cap_decode(s, cap_ratio) else ""
        errors = ", ".join(f"`{e}`" for e in s["errors"]) or "–"
        lines.append(
            f"| {s['name']} | {s['kind']} | {knobs} "
            f"| {'–' if ratio is None else f'{ratio:.4f}'} "
            f"| {'–' if decode is None else f'{decode:.4f}'}{over} | "
            + " | ".join(_pos(b.get(k)) for k in BOUNDS)
            + f" | {s['verdict']} | {errors} |"
        )
    return head + "\n".join(lines) + "\n"


#: the value each reference-decode bound judges, as a row's summary records it
DECODE_VALUES: dict[str, str] = {
    "decode_mean": "mean_gap",
    "decode_answer": "worst_answer_gap",
    "decode_large": "large_gap_share",
}


def _excess(summary: dict[str, Any]) -> float | None:
    e = (summary.get("allowance") or {}).get("excess")
    return float(e) if isinstance(e, int | float) else None


def attainable(summaries: Sequence[dict[str, Any]], cap_ratio: float) -> dict[str, Any]:
    """How far apart *any* reference-decode bound could put these rows.

    Each of the three bounds allows a value that depends on the engine's scoring loss e
    alone, and never less for a larger e (a lossier scoring buys no less decode): an
    allowance ``f(e)``. Every honest row inside the cap sits at or below ``HONEST_MAX`` of
    ``f`` and a double spender over the cap at or above ``SPENDER_MIN`` of it only if the
    spender's value is at least ``SPENDER_MIN / HONEST_MAX`` times that of every honest row
    whose e is no larger than its own (equal to a part in a million counts as equal: the
    same records scored by the same model differ by rounding); and then some ``f`` does it
    (twice the largest honest value at or below e). So, per spender and bound, this returns
    the spender's value over that largest honest value (``ratio``; ``needed`` is the target)
    and which honest row it is; the best bound per spender; and the weakest spender's best.
    Summaries of repeated honest runs (``kind`` honest) count each as a row.
    """
    honest = [s for s in summaries if s["kind"] == "honest" and inside_cap(s, cap_ratio)]
    spenders = [s for s in summaries if s["kind"] == "cheat" and over_cap_decode(s, cap_ratio)]
    needed = SPENDER_MIN / HONEST_MAX
    per_spender: dict[str, dict[str, Any]] = {}
    for s in spenders:
        e = _excess(s)
        bounds: dict[str, dict[str, Any]] = {}
        for key, field in DECODE_VALUES.items():
            value = s.get(field)
            if e is None or not isinstance(value, int | float):
                continue
            below = [
                (float(h[field]), h["name"])
                for h in honest
                if isinstance(h.get(field), int | float)
                and (he := _excess(h)) is not None
                and he <= e * (1 + 1e-6) + 1e-12  # the same records' e, to rounding
            ]
            if not below:
                continue
            top, name = max(below)
            ratio = math.inf if top <= 0 else float(value) / top
            bounds[key] = {
                "ratio": ratio,
                "value": float(value),
                "honest": name,
                "honest_value": top,
            }
        best = max(bounds, key=lambda k: bounds[k]["ratio"]) if bounds else None
        per_spender[s["name"]] = {
            "excess": e,
            "bounds": bounds,
            "best": best,
            "best_ratio": bounds[best]["ratio"] if best else None,
            "separable": best is not None and bounds[best]["ratio"] >= needed,
        }
    ratios = [p["best_ratio"] for p in per_spender.values() if p["best_ratio"] is not None]
    return {
        "needed": needed,
        "honest_rows": sorted({s["name"] for s in honest}),
        "spenders": per_spender,
        "weakest": min(ratios, default=None),
        "inseparable": sorted(n for n, p in per_spender.items() if not p["separable"]),
    }


def attainable_table(result: dict[str, Any]) -> str:
    """``attainable``'s result as markdown: one line per double spender over the cap."""
    lines = [
        "| double spender | its e | "
        + " | ".join(f"`{k}`: ratio (against)" for k in DECODE_VALUES)
        + f" | best | {result['needed']:g}x reachable |",
        "| --- | ---: | " + " | ".join("---" for _ in DECODE_VALUES) + " | ---: | --- |",
    ]
    for name, p in result["spenders"].items():
        cells = []
        for key in DECODE_VALUES:
            b = p["bounds"].get(key)
            cells.append("–" if b is None else f"{_pos(b['ratio'])} ({b['honest']})")
        lines.append(
            f"| {name} | {p['excess']:.4f} | "
            + " | ".join(cells)
            + f" | {_pos(p['best_ratio'])} | {'yes' if p['separable'] else '**no**'} |"
        )
    return "\n".join(lines) + "\n"
