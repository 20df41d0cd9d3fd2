"""The GPU rows' subsection of ``docs/benchmarks.md`` section 7: a pure function of the
results file (``calibration/results/gpu_verify.json``), each position recomputed under the
bounds the spec ships now."""

from __future__ import annotations

from typing import Any

from calibration import margins, tiny_budget, tiny_spec
from calibration.rows import margin_rows
from calibration.table import DOCS, GPU_HEADING, separation_text
from verifier.checks.budget import decode_allowances

#: the docs subsection ``python -m calibration.gpu_verify --table`` owns: from its heading
#: to the next heading
HEADING = GPU_HEADING


def table(doc: dict[str, Any]) -> str:
    """The GPU rows as markdown, one line per row (runs gathered), with each honest row's
    decode positions under the bounds the spec ships now, recomputed from the recorded gaps
    and scoring loss e (``integrity.reference_decode``'s arithmetic)."""
    settings = tiny_spec()["integrity"]["reference_decode"]
    budget = tiny_budget()
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in doc["runs"]:
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
            "yes" if all(r["ok"] for r in runs) else "no: " + str(first.get("note") or ""),
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
    """The trust-margin rows among the runs (``--margins``), one line per run, each
    position under the exchange rates the spec ships now (``calibration.margins.at_rates``
    on the recorded gaps and e), and their separation."""
    spec = tiny_spec()
    settings = spec["integrity"]["reference_decode"]
    runs = [margins.at_rates(r, settings) for r in margin_runs(doc)]
    if not runs:
        return ""
    return (
        "\n**Trust margins on the GPU** (`python -m calibration.gpu_verify --margins`): the "
        "rows of the CPU's trust-margin table above, one line per run, each position recomputed "
        "under the exchange rates the spec ships now from the run's recorded gaps and e; "
        "*verdict* is the run's own, under the rates of its commit.\n\n"
        + separation_text(runs, float(spec["quality"]["max_ratio"]))
    )


def write_table(doc: dict[str, Any]) -> None:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(HEADING)
    end = text.index("\n#", start + len(HEADING))
    m = doc["machine"]
    body = (
        f"{HEADING}\n\n`bash bench/gpu.sh -k verifications` (`python -m calibration.gpu_verify`; "
        "`--merge` gathers the calls, `--table` writes this table) · "
        "`calibration/results/gpu_verify.json`\n\n"
        f"{m['gpu']['gpu_name']}, {m.get('cores')} CPU cores, {m['date']}: {doc['note']}. "
        "Each run is `podium verify BUNDLE --runner process` on the GPU variant of tiny (the "
        "spec as shipped, its hardware that GPU, its reference on `cuda` in float32), so an "
        "honest run ends UNOFFICIAL: what counts is that no check fails. *mean / allowed now* "
        "and *worst / allowed now* put the largest recorded gaps against the allowances the "
        "spec ships today (the same gaps and e, today's exchange rates); *reference "
        "attention* is what the reference's self-test found (tested → served); *commit* is "
        "the tree each row's runs measured. Runs made unclean by a neighbour's engine "
        "(`--jobs`, `env.gpu-busy`) were re-run alone and are not counted.\n\n"
        + table(doc)
        + "\n"
        + margins_text(doc)
    )
    DOCS.write_text(text[:start] + body + text[end:], encoding="utf-8")
