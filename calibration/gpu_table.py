"""The GPU rows of ``docs/benchmarks.md`` section 7: pure functions of the results file
(``calibration/results/gpu_verify.json``), each position recomputed under the bounds the
spec ships now. ``bench.docs`` renders them into the document's regions;
``python -m calibration.gpu_verify --table`` rewrites those regions through it."""

from __future__ import annotations

from typing import Any

from calibration import margins, tiny_budget, tiny_spec
from calibration.rows import margin_rows
from calibration.table import separation_text
from verifier.checks.budget import decode_allowances


def table(doc: dict[str, Any]) -> str:
    """The GPU rows as markdown, one line per row (runs gathered; the double spenders of the
    trust margins left out: ``margins_text`` names each), with each row's decode positions
    under the bounds the spec ships now, recomputed from the recorded gaps and scoring loss
    e (``integrity.reference_decode``'s arithmetic)."""
    settings = tiny_spec()["integrity"]["reference_decode"]
    budget = tiny_budget()
    spenders = {r.name for r in margin_rows() if r.kind == "cheat"}
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in doc["runs"]:
        if r["name"] not in spenders:
            rows.setdefault(r["name"], []).append(r)
    lines = [
        "| row | kind | runs | commit | verdicts | PPL | mean gap | worst answer | e "
        "| mean / allowed now | worst / allowed now | reference attention | failing checks "
        "| as expected |",
        "| --- | --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- "
        "| --- |",
    ]

    def most(values: list[Any]) -> str:
        nums = [v for v in values if isinstance(v, int | float)]
        return f"{max(nums):.4f}" if nums else "–"

    for name, runs in rows.items():
        first = runs[0]
        excess = [(r.get("allowance") or {}).get("excess") or 0.0 for r in runs]
        mean_pos = [
            (r["mean_gap"] or 0.0) / decode_allowances(budget, settings)[0]
            for r, e in zip(runs, excess, strict=True)
            if r.get("mean_gap") is not None
        ]
        answer_pos = [
            (r["worst_answer_gap"] or 0.0) / decode_allowances(budget, settings)[1]
            for r, e in zip(runs, excess, strict=True)
            if r.get("worst_answer_gap") is not None
        ]
        tests = [r.get("reference_self_test") or {} for r in runs]
        attention = sorted({f"{t.get('tested')}→{t.get('serving')}" for t in tests if t})
        failing = sorted({c["id"] for r in runs for c in r.get("failing_checks") or []})
        verdicts = sorted({str(r.get("verdict")) for r in runs})
        ppl = first.get("ppl")
        cells = [
            name,
            first["kind"],
            str(len(runs)),
            ", ".join(sorted({str(r.get("git_sha", ""))[:7] for r in runs})),
            ", ".join(verdicts),
            f"{ppl:.3f}" if ppl else "–",
            most([r.get("mean_gap") for r in runs]),
            most([r.get("worst_answer_gap") for r in runs]),
            most(excess) if mean_pos else "–",
            f"{max(mean_pos):.2f}" if mean_pos else "–",
            f"{max(answer_pos):.2f}" if answer_pos else "–",
            ", ".join(attention) or "–",
            ", ".join(f"`{f}`" for f in failing) or "–",
            "yes" if all(r["ok"] for r in runs) else f"no (expected {first.get('expected')})",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def margin_runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of trust-margin rows among ``doc``'s (a margin row run among the honest
    rows, ``rows()``, counts as one too), each with its row's ``decode_ratio``."""
    decode_ratio = {r.name: r.decode_ratio for r in margin_rows()}
    return [
        {**r, "decode_ratio": decode_ratio[r["name"]]}
        for r in doc["runs"]
        if r["name"] in decode_ratio and "error" not in r
    ]


def margins_text(doc: dict[str, Any]) -> str:
    """The separation of the trust-margin rows among the runs (``--margins``), every run's
    positions under the exchange rates the spec ships now (``calibration.margins.at_rates``
    on the recorded gaps and e); the runs themselves are ``table``'s rows."""
    spec = tiny_spec()
    settings = spec["integrity"]["reference_decode"]
    runs = [margins.at_rates(r, settings) for r in margin_runs(doc)]
    if not runs:
        return "No trust-margin rows in the results."
    return separation_text(runs, float(spec["quality"]["max_ratio"]), table=False)


def provenance(doc: dict[str, Any]) -> str:
    """Where and when the GPU rows ran: the GPU, the commits, the dates of the calls."""
    m = doc["machine"]
    dates = sorted(str(c.get("date") or "")[:10] for c in doc.get("calls", []) if c.get("date"))
    shas = sorted({str(r.get("git_sha", ""))[:7] for r in doc["runs"]})
    return (
        f"{m['gpu']['gpu_name']}, {m.get('cores')} CPU cores; {len(doc['runs'])} runs at "
        f"{', '.join(f'`{x}`' for x in shas)}"
        + (f", {dates[0]} to {dates[-1]}" if dates and dates[0] != dates[-1] else "")
        + (f", {dates[0]}" if dates and dates[0] == dates[-1] else "")
        + "."
    )
