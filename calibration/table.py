"""The calibration's tables in ``docs/benchmarks.md`` (section 7): pure functions of a
results file (``calibration/results/calibration.json``), the rows and their trust margins.

``bench.docs`` renders them into the document's regions; ``python -m
calibration.calibrate`` (after a run, and with ``--table``) rewrites every region that reads
the results file through it. Every position is taken under the allowances the tiny spec
ships now, from the gaps each row recorded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from calibration import margins, tiny_budget, tiny_spec
from calibration.rows import LEFT_OUT
from verifier.checks.budget import decode_allowances

COMMAND = "python -m calibration.calibrate"


def _num(value: Any, spec: str) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–" if value is None else str(value)
    return format(value, spec)


def _pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def allowed_now() -> tuple[float, float, float]:
    """The reference decode's allowances under the tiny spec as shipped: the mean gap, one
    answer's mean gap, the share of tokens over a nat."""
    return decode_allowances(tiny_budget(), tiny_spec()["integrity"]["reference_decode"])


def _ppl(summary: dict[str, Any]) -> str:
    """The judged PPL, and the engine's own where flattery made it lower."""
    text = _num(summary["ppl"], ".3f")
    own = summary.get("engine_ppl")
    if own is not None and summary["ppl"] is not None and own < summary["ppl"] - 5e-4:
        text += f" (engine's {own:.3f})"
    return text


def _knobs(summary: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in summary["config"].items()]
    parts += [f"{k}={v}" for k, v in summary["env"].items()]
    return ", ".join(f"`{p}`" for p in parts) or "–"


def _verdict(summary: dict[str, Any]) -> str:
    if summary["judged"] != summary["verdict"]:
        return f"{summary['verdict']} ({summary['judged']} but for the caching skip)"
    return str(summary["verdict"])


def _expected(s: dict[str, Any]) -> str:
    mark = "yes" if s["meets"] else f"**NO** (expected {s['expected']})"
    if s["meets"] and s["expected"].startswith("VERIFIED (nothing"):
        computed = (s.get("cheat_stats") or {}).get("computed_tokens")
        mark = "yes: no prompt repeated, nothing to replay" + (
            f" ({computed} tokens computed, 0 replayed)" if computed is not None else ""
        )
    if s.get("noise_only"):
        mark = "yes but for `tps.unstable` (the machine's noise)"
    return mark


def markdown_table(summaries: Sequence[dict[str, Any]]) -> str:
    """One line per row: its numbers, its decode's positions under today's allowances
    (``allowed_now``), its verdict and whether it met its expectation."""
    mean_ok, answer_ok, _ = allowed_now()
    head = (
        "| row | engine | knobs | PPL | ratio | mean gap | worst answer | > 1 nat | e "
        "| mean / allowed | worst / allowed | verdict | error ids | as expected |\n"
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| --- | --- | --- |\n"
    )
    lines = []
    for s in summaries:
        errors = ", ".join(f"`{e}`" for e in s["errors"]) or "–"
        if s.get("refusal"):
            errors = "refused: " + s["refusal"].replace("|", "/").replace("`", "'")
        mean, worst = s["mean_gap"], s["worst_answer_gap"]
        lines.append(
            f"| {s['name']} | `{s['engine'].split('.', 1)[1]}` | {_knobs(s)} "
            f"| {_ppl(s)} | {_num(s['ppl_ratio'], '.4f')} "
            f"| {_num(mean, '.4f')} | {_num(worst, '.3f')} "
            f"| {_pct(s['large_gap_share'])} | {_num(s['allowance'].get('excess'), '.4f')} "
            f"| {_num(None if mean is None else mean / mean_ok, '.2f')} "
            f"| {_num(None if worst is None else worst / answer_ok, '.2f')} "
            f"| {_verdict(s)} | {errors} | {_expected(s)} |"
        )
    return head + "\n".join(lines) + "\n"


def rows_text(result: dict[str, Any]) -> str:
    """The rows of a results file (the margin rows apart): where and when they were measured,
    the table, and the rows that did not meet their expectation."""
    m = result["machine"]
    summaries = result["rows"]
    misses = [s["name"] for s in summaries if not s["meets"] and not s.get("noise_only")]
    noisy = [s["name"] for s in summaries if s.get("noise_only")]
    shas = sorted({s.get("git_sha") or m.get("git_sha") or "?" for s in summaries})
    mean_ok, answer_ok, _ = allowed_now()
    verdict_line = (
        "Every row meets its expectation."
        if not misses
        else "Rows that do not meet their expectation: " + ", ".join(misses) + "."
    )
    if noisy:
        verdict_line += (
            " Rows whose trials disagreed on the busy machine (`tps.unstable`), every "
            "other check as expected: " + ", ".join(noisy) + "."
        )
    return (
        f"Measured at {', '.join(f'`{x[:7]}`' for x in shas)} on {m.get('cores')} shared cores "
        f"({m.get('cpu')}), {str(m.get('date'))[:10]}. The model's own PPL on the held-out set "
        f"is {result['model_ppl']:.6f}; the cap is {result['cap']:.4f}. *mean / allowed* and "
        f"*worst / allowed* put the row's gaps against today's allowances ({mean_ok:.3f} and "
        f"{answer_ok:.2f}).\n\n"
        f"{markdown_table([s for s in summaries if s.get('decode_ratio') is None])}\n"
        f"{verdict_line} Left out: {'; '.join(f'`{k}` ({v})' for k, v in LEFT_OUT.items())}."
    )


def margin_text(result: dict[str, Any]) -> str:
    """The trust-margin rows (``margin_rows``): each row's position at each bound, the
    reference decode's taken under today's allowances (``margins.at_rates``), and the
    separation between honest rows inside the cap and double spenders over it."""
    settings = tiny_spec()["integrity"]["reference_decode"]
    rows_ = [
        margins.at_rates(s, settings) for s in result["rows"] if s.get("decode_ratio") is not None
    ]
    if not rows_:
        return "No trust-margin rows in the results."
    return separation_text(rows_, result["cap"] / result["model_ppl"])


def separation_text(rows_: list[dict[str, Any]], cap_ratio: float, table: bool = True) -> str:
    """Margin rows as a table of positions (``table``), the highest and lowest position at
    each bound, and whether the rows sit apart (``calibration.margins.separation``)."""
    sep = margins.separation(rows_, cap_ratio)
    per = sep["per_bound"]

    def pos(value: Any) -> str:
        return "–" if value is None else f"{value:.2f}"

    bound_lines = "\n".join(
        f"| `{k}` | {what} | {pos(per[k]['honest_max'])} | {pos(per[k]['spender_min'])} "
        f"| {pos(per[k]['spender_max'])} |"
        for k, what in margins.BOUNDS.items()
    )
    deciding = ", ".join(
        f"{name}: `{d['bound']}` {pos(d['position'])}" for name, d in sep["deciding"].items()
    )
    head = margins.markdown_table(rows_, cap_ratio) + "\n" if table else ""
    return f"""{head}Per bound, the highest position of an honest row inside the cap and the
lowest and highest of a double spender whose decode alone breaks the cap:

| bound | what | honest max | spender min | spender max |
| --- | --- | ---: | ---: | ---: |
{bound_lines}

Every honest row inside the cap at or below {margins.HONEST_MAX} of every allowance:
**{"yes" if sep["honest_ok"] else "no"}** (its worst position {pos(sep["honest_worst"])}).
Every double spender over the cap at or above {margins.SPENDER_MIN} of one allowance:
**{"yes" if sep["spenders_ok"] else "no"}** (weakest {pos(sep["spender_weakest"])}).
Deciding bound of each: {deciding}.
"""
