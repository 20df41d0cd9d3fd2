"""The region "where a goal is missed" of ``docs/benchmarks.md``: each goal the results
files show missed, with the numbers they show it by. Prose that states no number stays in
the document; a sentence whose numbers come from a results file is rendered here."""

from __future__ import annotations

import statistics
from typing import Any

from bench.docs_bench import TIMING_GOAL, _median_abs
from bench.docs_region import Region, pct, span
from calibration import gpu_table, margins, tiny_spec

B, C = "bench/results/", "calibration/results/"


def _spenders(rows: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    settings = tiny_spec()["integrity"]["reference_decode"]
    cap = float(tiny_spec()["quality"]["max_ratio"])
    return [
        margins.at_rates(r, settings)
        for r in rows
        if r["name"].startswith(prefix) and margins.over_cap_decode(r, cap)
    ]


def _top(row: dict[str, Any]) -> float:
    return max(v for v in (row.get("bounds") or {}).values() if isinstance(v, float))


def _double_spenders(cpu: dict[str, Any], gpu: dict[str, Any], att: dict[str, Any]) -> str:
    cpu_rows = [r for r in cpu["rows"] if r.get("decode_ratio") is not None]
    gpu_rows = gpu_table.margin_runs(gpu)
    honest_self = [
        (r.get("bounds") or {}).get("self_gap") or 0.0
        for rows in (cpu_rows, gpu_rows)
        for r in _spenders(rows, "spender ")
    ]
    hiding = [
        _top(r)
        for rows in (cpu_rows, gpu_rows)
        for prefix in ("forging", "routing")
        for r in _spenders(rows, prefix)
        if r.get("decode_ratio", 0) < 1.1  # one window-step past the cap (12), not 8
    ]
    stuck = [
        res["spenders"][n]["best_ratio"]
        for res in att["machines"].values()
        for n in res["inseparable"]
    ]
    return (
        "- **A double spender one window-step past the cap that answers its probes is not 1.5 "
        "times any allowance** (section 7; the goal: every double spender whose decode alone "
        "breaks the cap at 1.5 of an allowance or more). One that scores its own answers "
        f"honestly sits at {min(honest_self):.2f} of the self-gap allowance or more. One that "
        "remembers its answers (`ForgedDecodeWindow`) or routes every chat-shaped request, "
        "probes included, to its decode model (`RoutedDecodeWindow`) is judged by the reference "
        f"decode alone: decoding with a window of 12, its highest position is "
        f"{span(hiding, '.2f')} (CPU and H200). No allowance, constant or growing with the "
        f"scoring loss, can do better: the best reaches {span(stuck, '.2f')} times the honest rows "
        "of no larger loss where 3 is needed, because a window one step harsher decodes only "
        "that much worse than the honest window one step milder. What a VERIFIED entry may "
        "still do there is written down in measurement.md (`integrity.reference-decode`, "
        '"What it lets through").'
    )


def _shipped(run: dict[str, Any]) -> bool:
    """The self-test as it ships, warm: sdpa at the E4B shape in bf16, its first layers."""
    return (
        run["model"] == "e4b-random"
        and run["implementation"] == "sdpa"
        and run["dtype"] == "bfloat16"
        and run.get("state") is None
    )


def missed(
    fidelity: dict[str, Any],
    anchor: dict[str, Any],
    noise: dict[str, Any],
    attention: dict[str, Any],
    cost: dict[str, Any],
    cpu: dict[str, Any],
    gpu: dict[str, Any],
    att: dict[str, Any],
    *controls: dict[str, Any],
) -> str:
    paced = [c for c in fidelity["cells"] if c["rate"]]
    worst = max(c["max_abs_error_vs_engine"] for c in paced)
    nominal = [c for c in paced if abs(c["median_error_vs_nominal"]) > 0.005]
    cold = next(r for r in attention["runs"] if r.get("state") == "cold")
    warm = next(r for r in attention["runs"] if _shipped(r))
    med = {k: v["now"] for k, v in cost["stages_median_s"].items()}
    wall = statistics.median(p["now"]["wall_s"] for p in cost["pairs"])
    ref_all = med["reference"] + med["reference-load"] + med["reference-engine"]
    honest = [
        r
        for doc in controls
        for row in (doc["rows"].values() if "rows" in doc else [{"kind": "honest", **doc}])
        if row["kind"] == "honest"
        for r in row["per_run"]
    ]
    items = [
        "- **The attention self-test's first run in a fresh process** (section 8): "
        f"{cold['seconds']:.1f} s on the H200 at the E4B shape, against {warm['seconds']:.1f} s "
        f"warm ({warm['seconds'] * attention['a10g_factor']:.1f} s on an A10G, estimated; the "
        "goal is 10 s). What would close it: a verdict kept per GPU name, driver, torch "
        "version, dtype and model digest, where no engine can write, or a measurement of how "
        "much of that first use the judging's own shapes share.",
        f"- **Timing error of single trials on a loaded machine** (section 1): up to "
        f"{pct(worst)} in one trial, while the median trial of every cell is within "
        f"{pct(max(_median_abs(c) for c in paced), 3)} (the goal is {pct(TIMING_GOAL)}). What "
        "closes it: a verification host that runs nothing else, and trials as long as "
        "fast-gemma's 60 s minimum.",
        f"- **TPS against the nominal rate at high rates** (section 1): missed in {len(nominal)} "
        f"of {len(paced)} cells, the worst "
        f"{pct(min(c['median_error_vs_nominal'] for c in paced), 2)} "
        "(the goal is 0.5 %): the closed loop's per-request cost against short requests, which "
        "matters only for engines far faster per stream than the frontier. What would close it: "
        "cores to spare, and a faster event loop and JSON parser (new dependencies not taken).",
        f"- **podium vs. guidellm** (section 2, not a goal with a threshold): podium reads "
        f"{pct(anchor['summary']['ratio_podium_guidellm']['median'] - 1, 0)} above guidellm at the "
        "median, because guidellm's own start-up and CPU use compete with the CPU engine it "
        "measures on 2 cores.",
        f"- **Noise on this VM** (section 4): {pct(noise['within_run_cv'], 0)} trial to trial "
        f"and {pct(noise['between_run_cv'], 0)} run to run, above what a 5 % reproduction "
        "tolerance with 3 trials can resolve. What closes it is the machine: a dedicated host, "
        "pinned cores, trials of 60 s, and the spec's trial count from the measured CV "
        "(section 4's sizing table).",
        f"- **A tiny verification's wall time over its evaluation plus its reference** (section "
        f"13): {wall / (med['evaluation'] + med['reference']):.2f} against the goal of 1.3, and "
        f"the reference's whole cost (load, judging, stop) {pct(ref_all / wall, 0)} of the wall "
        "time against the goal of 10 %. What remains is mostly the participant's engine's own "
        "boot, which the verifier's tokenizer and reference load fill, and one-time imports a "
        "process that verifies many entries pays once.",
        _double_spenders(cpu, gpu, att),
        f"- **Fresh controls are calibrated on tiny's busy CPU only** (section 16: "
        f"{len(honest)} honest runs, {sum(r['verdict'] == 'REJECTED' for r in honest)} REJECTED; "
        "the goal is 20 a row on the machine organizers use). fast-gemma's `integrity.controls` "
        "settings are an estimate until `python -m calibration.false_rejection --controls` runs "
        "on the real engine and model on an A10G.",
    ]
    return "\n".join(items)


REGIONS = [
    Region(
        "missed",
        "benchmarks",
        (
            B + "fidelity.json",
            B + "anchor.json",
            B + "noise.json",
            B + "attention_cost.json",
            B + "verify_cost.json",
            C + "calibration.json",
            C + "gpu_verify.json",
            C + "attainable.json",
            C + "false_rejection-controls.json",
            C + "false_rejection-tiny-baseline-controls.json",
            C + "false_rejection-controls-cheats.json",
        ),
        missed,
    )
]
