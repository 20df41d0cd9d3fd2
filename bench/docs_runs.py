"""The regions of ``docs/benchmarks.md`` rendered from whole runs of podium: what a tiny
verification costs and where its seconds go (``verify_cost``), the tiny challenge on real
vLLM (``vllm_tiny``), the launcher's gate (``proxy``), a sweep (``sweep_cost``), the
jail runner (``jail_cost``) and the test suite as CI runs it (``suite_cost``)."""

from __future__ import annotations

import statistics
from typing import Any

from bench.docs_region import Region, machine_line, pct, sha, span

R = "bench/results/"
#: the stages of a verification, in the order they run, as the table groups them
STAGE_ROWS = (
    (
        "intake, environment, data, weights, rebuild, start",
        ("intake", "environment", "data", "weights", "rebuild", "start"),
    ),
    ("tokenizer, reference-load (while the engine boots)", ("tokenizer", "reference-load")),
    ("isolation (the wait for it), ready", ("isolation", "ready")),
    ("evaluation, checks, harness", ("evaluation", "checks", "harness")),
    ("stop, cleanup", ("stop", "cleanup")),
    ("reference (its judging)", ("reference",)),
    ("reference-engine, teardown, verdict", ("reference-engine", "teardown", "verdict")),
)


def _walls(doc: dict[str, Any], side: str) -> list[float]:
    return [p[side]["wall_s"] for p in doc["pairs"]]


def verify_cost(doc: dict[str, Any]) -> str:
    ratios = ", ".join(f"{r:.2f}" for r in doc["ratios"])
    return (
        f"{len(doc['pairs'])} pairs against {doc['baseline']}, "
        f"{machine_line(doc['machine'])}: this tree "
        f"{span(_walls(doc, 'now'), '.1f', ' s')}, {doc['baseline']} "
        f"{span(_walls(doc, 'baseline'), '.1f', ' s')}; per-pair ratios {ratios}, "
        f"**median {doc['ratio_median']:.2f}** (the goal: at most 1.15). Every run "
        + (
            "was VERIFIED."
            if all(p[s]["verdict"] == "VERIFIED" for p in doc["pairs"] for s in ("now", "baseline"))
            else "is in the results file with its verdict."
        )
    )


def stages(doc: dict[str, Any]) -> str:
    med = {k: v["now"] for k, v in doc["stages_median_s"].items()}
    lines = [
        f"| {label} | {sum(med.get(n, 0.0) for n in names):.2f} |" for label, names in STAGE_ROWS
    ]
    wall = statistics.median(_walls(doc, "now"))
    judged = med["evaluation"] + med["reference"]
    ref_all = med["reference"] + med["reference-load"] + med["reference-engine"]
    return (
        f"Medians of the {len(doc['pairs'])} runs of this tree in section 10 "
        f"(`python -m bench.verify_cost`), seconds:\n\n| stage | seconds |\n| --- | --- |\n"
        + "\n".join(lines)
        + f"\n| **wall time** | **{wall:.1f}** |\n\n"
        f"- the `reference` stage, its judging: {pct(med['reference'] / wall)} of the wall time "
        "(the goal: at most 10 %);\n"
        "- every stage of the reference (its load, its judging, its stop): "
        f"{pct(ref_all / wall)};\n"
        f"- wall time over evaluation and reference: **{wall / judged:.2f}** "
        "(the goal: at most 1.3)."
    )


def _engine(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [r for r in doc["runs"] if r["engine"] == name]


def vllm_tiny(doc: dict[str, Any]) -> str:
    names = [n for n in ("baseline", "vllm", "vllm-mtp") if _engine(doc, n)]
    s = doc["summary"]

    def cell(name: str, key: str, spec: str, unit: str = "") -> str:
        runs = _engine(doc, name)
        values = [r[key] for r in runs if r.get(key) is not None]
        if not values:
            return ""
        each = ", ".join(format(v, spec) for v in values)
        return f"{statistics.median(values):{spec}}{unit} ({each})"

    rows = [
        ["verdict"] + [", ".join(r["verdict"] for r in _engine(doc, n)) for n in names] + ["", ""],
        ["TPS (median of trials)"]
        + [cell(n, "tps", ".1f") for n in names]
        + [
            f"{s['ratios_vllm_over_baseline']['tps']:.2f}",
            f"{s['ratios_mtp_over_vllm']['tps']:.2f}",
        ],
        ["PPL"]
        + [f"{s[n]['ppl']:.6f}" for n in names]
        + [f"relative difference {s['ppl_relative_difference']:.1e}", ""],
        ["drafts accepted (vLLM's `/metrics`)"]
        + [cell(n, "acceptance_rate", ".3f") for n in names]
        + ["", ""],
        ["start-up (container started until ready)"]
        + [cell(n, "startup_s", ".1f", " s") for n in names]
        + [
            f"{s['ratios_vllm_over_baseline']['startup_s']:.1f}",
            f"{s['ratios_mtp_over_vllm']['startup_s']:.2f}",
        ],
        ["verification wall time"]
        + [cell(n, "wall_s", ".1f", " s") for n in names]
        + [
            f"{s['ratios_vllm_over_baseline']['wall_s']:.1f}",
            f"{s['ratios_mtp_over_vllm']['wall_s']:.2f}",
        ],
    ]
    base_ms = 1000 / s["baseline"]["tps"]
    vllm_ms = 1000 / s["vllm"]["tps"]
    return (
        f"{machine_line(doc['machine'], doc['load_average_after'])}; each cell the median "
        "of the verifications, each one's value in brackets.\n\n"
        "| | baseline engine | vLLM | vLLM + MTP | vLLM / baseline | MTP / vLLM |\n"
        "| --- | --- | --- | --- | --- | --- |\n"
        + "\n".join("| " + " | ".join(r) + " |" for r in rows)
        + f"\n\nvLLM spends {vllm_ms:.1f} ms a token here against the baseline's {base_ms:.1f} ms; "
        f"MTP drafting keeps {s['vllm-mtp']['acceptance_rate']:.3f} of the drafted tokens and "
        "makes "
        f"vLLM {s['ratios_mtp_over_vllm']['tps']:.2f} times as fast. The tiny spec's baseline for "
        f"speed-ups is the vLLM column's median, {s['vllm']['tps']:.1f} tok/s "
        "(`tps.baselines` in `podium/data/challenges/tiny.json`)."
    )


def proxy(doc: dict[str, Any]) -> str:
    sizes = doc["sizes"]
    medians = [s["overhead_us_median"] for s in sizes]
    frontier = max(s["overhead_of_a_frontier_request"] for s in sizes)
    return (
        f"The gate adds {span(medians, '.0f', ' µs')} per request (median of "
        f"{len(sizes[0]['rounds'])} rounds of {sizes[0]['requests_per_round']} requests, for "
        f"{' and '.join(str(s['max_tokens']) for s in sizes)}-token answers; "
        f"{machine_line(doc['machine'])}): at most {pct(frontier, 2)} of one fast-gemma TPS "
        "request at the frontier."
    )


def sweep_cost(doc: dict[str, Any]) -> str:
    cost = doc["cost"]
    each = "; ".join(
        f"{kind} {c['median_s']:.0f} s ({c['runs']} run{'s' if c['runs'] > 1 else ''}, "
        f"{c['min_s']:.0f} to {c['max_s']:.0f})"
        for kind, c in cost.items()
    )
    runs = doc["runs"]
    base_s = sum(r["seconds"] for r in runs if r["role"] == "baseline")
    points = "\n".join(
        f"| {r['seq']} | {r['role']} | {_label(r['changes'])} | {r['tps']:.1f} | {r['ppl']:.4f} "
        f"| {r['verdict']} | {', '.join(f'`{f}`' for f in r['failing']) or '–'} |"
        for r in runs
    )
    d, rec = doc["default"], doc["recommended"]
    return (
        f"`{doc['command']}`; {machine_line(doc['machine'], doc['load_average_after'])}. "
        f"Each run, from packaging to the report, median: {each}. "
        f"The whole sweep took {doc['wall_s']:.0f} s: {len(runs)} runs. The baseline runs "
        f"(drift control) took {pct(base_s / sum(r['seconds'] for r in runs), 0)} of it; the "
        f"default's own TPS moved by {pct(doc['drift']['spread'])} between them.\n\n"
        "| # | role | point | TPS | public PPL | verdict | failing checks |\n"
        "| --- | --- | --- | --- | --- | --- | --- |\n"
        + points
        + f"\n\nRecommended: {_label(rec['changes'])}, {rec['rel']:.2f}x "
        f"[{rec['rel_ci95'][0]:.2f}, {rec['rel_ci95'][1]:.2f}] the default beside it "
        f"({rec['tps']:.1f} against {d['tps']:.1f} tok/s); blind on the held-out set "
        f"{rec['heldout_verdict']}, PPL {rec['heldout_ppl']:.4f} (cap {doc['cap']:.4f}); margin "
        f"{doc['margin']['value']:.4f}, limit {doc['limit']:.4f}."
    )


def _label(changes: dict[str, Any]) -> str:
    if not changes:
        return "the default"
    parts = []
    for knob, value in changes.items():
        if isinstance(value, dict):
            value = "{" + ", ".join(f"{k}={v}" for k, v in value.items()) + "}"
        parts.append(f"`{knob}={'none' if value is None else value}`")
    return " ".join(parts)


#: the goal for the whole suite in CI, in seconds
SUITE_GOAL_S = 20 * 60
#: how many of the latest runs the suite table shows
SUITE_RUNS_SHOWN = 3


def _runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of a results file (one written before runs were kept is one run)."""
    runs: list[dict[str, Any]] = doc.get("runs", [doc])
    return runs


def _pass_cell(run: dict[str, Any], name: str) -> str:
    p = run["passes"].get(name)
    return f"{p['wall_s']:,.0f} ({p['passed']:,} tests)" if p else "–"


def _beside(run: dict[str, Any]) -> str:
    beside = run.get("beside")
    if not beside:
        return "nothing"
    verdicts = [v["verdict"] for v in beside["verifications"]]
    return f"{len(verdicts)} tiny verifications in {beside['seconds']:.0f} s"


def _suite_row(run: dict[str, Any]) -> str:
    failed = sum(p["failed"] for p in run["passes"].values() if p)
    verdict = "exit 0" if run["exit_code"] == 0 else f"exit {run['exit_code']}, {failed} failed"
    total = run["wall_s"]
    return (
        f"| `{sha(run['machine']['git_sha'])}` {str(run['machine']['date'])[:10]} "
        f"| {_beside(run)} | {run['setup_s']:,.0f} | {_pass_cell(run, 'parallel')} "
        f"| {_pass_cell(run, 'serial')} | **{total:,.0f} ({total / 60:.1f} min)**, {verdict} |"
    )


def suite_cost(doc: dict[str, Any], before: dict[str, Any]) -> str:
    runs = _runs(doc)
    shown = runs[-SUITE_RUNS_SHOWN:]
    last, then = runs[-1], _runs(before)[-1]
    head = (
        "| run | beside it | setup | the suite on two workers | the timing tests, alone "
        "| **total** (seconds) |\n| --- | --- | ---: | ---: | ---: | ---: |\n"
    )
    met = all(r["exit_code"] == 0 and r["wall_s"] <= SUITE_GOAL_S for r in shown)
    steps = "".join(f"| {s['step']} | {s['s']:,.0f} | {s['rc']} |\n" for s in last.get("steps", []))
    slowest = "".join(f"| `{t['test']}` | {t['s']:,.1f} |\n" for t in last.get("slowest", []))
    flakes = [(r, f) for r in runs for f in r.get("failures", [])]
    failures = (
        "".join(
            f"| `{sha(r['machine']['git_sha'])}` | `{f['test']}` | {f['message'][:120]} |\n"
            for r, f in flakes
        )
        if flakes
        else "none in the runs recorded.\n"
    )
    return (
        f"{machine_line(last['machine'], last.get('load_average_after'))}; "
        f"`{last['command']}`. The last {len(shown)} of {len(runs)} runs recorded:\n\n"
        + head
        + "\n".join(_suite_row(r) for r in shown)
        + f"\n| `{sha(then['machine']['git_sha'])}` (before) {str(then['machine']['date'])[:10]} "
        f"| {_beside(then)} | {then['setup_s']:,.0f} | {_pass_cell(then, 'parallel')} "
        f"| {_pass_cell(then, 'serial')} | {then['wall_s']:,.0f} ({then['wall_s'] / 60:.1f} min) |"
        f"\n\nThe goal, every run under {SUITE_GOAL_S // 60} minutes and exit 0, is "
        f"{'met' if met else 'missed'} in the runs shown; the latest takes "
        f"{last['wall_s'] / then['wall_s']:.2f} times as long as the one before the change."
        + (
            "\n\nThe steps of the latest run (`test-artifacts/steps.jsonl`; the setup steps run "
            "two at a time, lint and the lowest tests beside the parallel pass):\n\n"
            "| step | seconds | exit |\n| --- | ---: | ---: |\n" + steps
            if steps
            else ""
        )
        + (
            f"\nThe {len(last['slowest'])} slowest tests of the latest run:\n\n"
            "| test | seconds |\n| --- | ---: |\n" + slowest
            if slowest
            else ""
        )
        + "\nEvery test that failed in a recorded run: "
        + ("\n\n| commit | test | message |\n| --- | --- | --- |\n" if flakes else "")
        + failures
    ).rstrip("\n")


def install_cost(doc: dict[str, Any]) -> str:
    """Each role's install: its line, seconds into a fresh venv, size, torch, its smoke runs."""
    rows = []
    for role, r in doc["roles"].items():
        runs = r.get("smoke") or []
        ok = sum(1 for s in runs if s["exit"] == 0)
        rows.append(
            f"| {role} | `{r['line']}`{' + `' + r['torch_pin'] + '`' if r.get('torch_pin') else ''}"
            f" | {r['install_s']:,.1f} | {r.get('size_mb', 0):,.0f} | {r.get('distributions', '–')}"
            f" | {r.get('torch') or 'none'} | {ok} of {len(runs)} |"
        )
    return (
        f"{machine_line(doc['machine'])}; `{doc['command'].strip()}`; {doc['installer']}.\n\n"
        "| role | line | install (s) | venv (MB) | distributions | torch | role's commands ok |\n"
        "| --- | --- | ---: | ---: | ---: | --- | ---: |\n" + "\n".join(rows)
    )


def _ms(us: float) -> str:
    return f"{us / 1e3:.2f}".replace("-", "−")


def jail_cost(doc: dict[str, Any]) -> str:
    up = doc["startup"]
    lines = [
        f"{machine_line(doc['machine'])}.",
        "",
        f"- **Start-up** (`{up.get('command', doc['command'])}`): a jail made and its probe "
        f"reported in {up['jail_open_s_median'] * 1e3:,.0f} ms (median of {up['starts']}), "
        "all of it before the engine's own interpreter starts (the probe is an interpreter "
        "of its own, which then `exec`s the engine); a plain interpreter's start, for "
        f"scale: {up['plain_python_s_median'] * 1e3:,.0f} ms.",
        "",
        f"The timer (`{doc.get('timer_command', doc['command'])}`), trials of about 3 s:",
        "",
        "| R per stream (tok/s) | c | error vs engine clock, plain (median / worst) | "
        "through the jail (median / worst) | harness time per request, plain / jail |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in doc["timer"]:
        plain, jail = row["plain"], row["jail"]
        lines.append(
            f"| {row['rate']:,} | {row['concurrency']} | "
            f"{pct(plain['error_vs_engine_median'], 3)} / {pct(plain['error_vs_engine_worst'], 3)}"
            f" | {pct(jail['error_vs_engine_median'], 3)} / {pct(jail['error_vs_engine_worst'], 3)}"
            f" | {_ms(plain['client_us_per_request'])} / {_ms(jail['client_us_per_request'])} ms |"
        )
    v = doc.get("verification")
    if v:

        def verdicts(side: str) -> str:
            said = [r[side]["verdict"] for r in v["runs"]]
            return ", ".join(f"{said.count(x)} {x}" for x in sorted(set(said)))

        lines += [
            "",
            f"- **A tiny verification** (`{v.get('command', doc['command'])}`: the baseline "
            "entry, held-out set, signed), "
            f"{v['pairs']} pairs side by side: `--runner jail` "
            f"{span([r['jail']['wall_s'] for r in v['runs']], '.0f', ' s')}, "
            f"`--runner local-docker` "
            f"{span([r['local_docker']['wall_s'] for r in v['runs']], '.0f', ' s')}; "
            f"**median ratio {v['ratio_median']:.2f}** (jail / local-docker); "
            f"verdicts: jail {verdicts('jail')}, local-docker {verdicts('local_docker')} "
            "(a FAILED run is in the results file with its failure; the machine was shared).",
        ]
    return "\n".join(lines)


REGIONS = [
    Region("verify-cost", "benchmarks", (R + "verify_cost.json",), verify_cost),
    Region("vllm-tiny", "benchmarks", (R + "vllm_tiny.json",), vllm_tiny),
    Region("proxy", "benchmarks", (R + "proxy.json",), proxy),
    Region("verify-stages", "benchmarks", (R + "verify_cost.json",), stages),
    Region("sweep-cost", "benchmarks", (R + "sweep_cost.json",), sweep_cost),
    Region("jail-cost", "benchmarks", (R + "jail_cost.json",), jail_cost),
    Region("install-cost", "benchmarks", (R + "install_cost.json",), install_cost),
    Region(
        "suite-cost",
        "benchmarks",
        (R + "suite_cost.json", R + "suite_cost-before.json"),
        suite_cost,
    ),
]
