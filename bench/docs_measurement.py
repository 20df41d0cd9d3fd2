"""The regions of ``docs/measurement.md``: the bounds as the shipped specs set them, and each
sentence whose numbers come from a results file (``bench.docs`` compares and rewrites them).
"""

from __future__ import annotations

import math
from typing import Any

from bench.docs_region import Region, pct, span
from calibration import tiny_budget, tiny_spec
from verifier.checks.budget import decode_allowances

B, C = "bench/results/", "calibration/results/"
TINY, FAST = "podium/data/challenges/tiny.json", "podium/data/challenges/fast-gemma.json"


def _budget(spec: dict[str, Any]) -> float:
    q = spec["quality"]
    ratio = q["max_ratio"] if q.get("rule") == "ratio" else q["max_ppl"] / q["reference_ppl"]
    return math.log(ratio)


#: every bound: what it is, what it allows, the key of its value on each challenge
#: (``_values``; None where the spec holds no number of its own) and where its inputs come from
BOUND_ROWS: tuple[tuple[str, str, str | None, str], ...] = (
    (
        "`integrity.reference-decode`, mean gap",
        "`budget_factor · B + mean_margin_nats`",
        "mean",
        "spec; gaps computed by the verifier's reference on the engine's token ids, over "
        "the verifier's own rendering of the prompt",
    ),
    ("per answer, mean gap", "`answer_margin_nats + answer_factor · B`", "answer", "as above"),
    (
        "share of tokens over `large_gap_nats` (1 nat)",
        "`large_share + large_share_factor · B`",
        "large",
        "as above",
    ),
    (
        "`ppl.reference-mismatch`, mean",
        "engine NLL − reference NLL ≥ −`max_lower_mean_nats`",
        "lower_mean",
        "spec; the engine's NLL is what is judged, the reference's is the verifier's",
    ),
    ("per record", "≥ −`max_lower_nats`, every entry alike", "lower", "spec"),
    (
        "whole set",
        "PPL ≥ `reference_ppl · exp(−max_lower_mean_nats)`",
        None,
        "spec (the pinned model's PPL on the pinned set)",
    ),
    (
        "claimed tops",
        "the share the reference puts over 1 nat below its top ≤ the large-gap allowance, "
        "with a Poisson count's tail",
        None,
        "spec; the reference's scoring of the same records",
    ),
    (
        "`integrity.same-path`, own-top fraction",
        "≥ `min_fraction`; less `large_share_factor · B` only with a KV-cache change "
        "**podium made true**",
        "fraction",
        'spec; "made true" is the verifier\'s own evidence: the pinned vLLM image it rebuilt, '
        "podium's launcher byte for byte, the knob in that launcher's command line "
        "(`verifier.checks.vllm_image.confirmed_levers`); never the declaration, the "
        "engine's log, `/version` or `/metrics`",
    ),
    (
        "self-gap",
        "≤ `max_mean_self_gap_nats`; plus `self_gap_factor · B` only with a KV cache podium "
        "made true",
        "self_gap",
        "as above",
    ),
    (
        "left out",
        "the large-gap allowance, with a Poisson count's tail",
        None,
        "spec; the reference's view of the probed answers",
    ),
)


def _values(spec: dict[str, Any]) -> dict[str, str]:
    """A challenge's value of each bound (``BOUND_ROWS``' keys), from its spec alone."""
    b = _budget(spec)
    i = spec["integrity"]
    rp, sp = i["reference_ppl"], i["same_path"]
    mean, answer, large = decode_allowances(b, i["reference_decode"])
    return {
        "B": f"{b:.4f}",
        "mean": f"{mean:.3f}",
        "answer": f"{answer:.2f}",
        "large": pct(large),
        "lower_mean": f"{rp['max_lower_mean_nats']}",
        "lower": f"{rp['max_lower_nats']}",
        "fraction": f"{sp['min_fraction']}",
        "self_gap": f"{sp['max_mean_self_gap_nats']}",
    }


def bounds(tiny: dict[str, Any], fast: dict[str, Any]) -> str:
    """The table of every bound, its inputs, and its value on each shipped challenge."""
    t, f = _values(tiny), _values(fast)
    rows = "\n".join(
        f"| {bound} | {allowed} | {f'{t[key]} / {f[key]}' if key else ''} | {inputs} |"
        for bound, allowed, key, inputs in BOUND_ROWS
    )
    return (
        f"`B` is {t['B']} nats per token on tiny and {f['B']} on fast-gemma (`ln "
        f"{tiny['quality']['max_ratio']}` for both ratio rules).\n\n"
        "| bound | allowed | tiny / fast-gemma | inputs, and where each comes from |\n"
        "| --- | --- | --- | --- |\n" + rows
    )


def tps_stability(hog: dict[str, Any], stab: dict[str, Any]) -> str:
    loaded = [r for r in stab["runs"] if r["loaded"]]
    trials = [r["trials_run"] for r in hog["per_run"]]
    cvs = [r["tps_cv"] for r in hog["per_run"]]
    verified = hog["verdicts"].get("VERIFIED", 0)
    return (
        f"On tiny an honest engine beside busy neighbours that come and go (trials at a CV of "
        f"up to {max(cvs):.2f} on a shared 2-core machine) is stable after "
        f"{span(trials, 'd')} trials ({verified} of {hog['runs']} runs VERIFIED, "
        "[benchmarks](benchmarks.md) section 9), while a clock that swings by a factor of "
        f"about five beside {stab['neighbours']} busy neighbours (CV "
        f"{span([r['cv'] for r in loaded], '.2f')}) is not, even after "
        f"{max(r['trials_run'] for r in loaded)} trials (its mean pinned to "
        f"±{span([100 * r['ci'] for r in loaded], '.0f', ' %')})."
    )


def self_test(doc: dict[str, Any]) -> str:
    def run(model: str, dtype: str, impl: str, layers: int) -> dict[str, Any]:
        return next(
            r
            for r in doc["runs"]
            if r["model"] == model
            and r["dtype"] == dtype
            and r["implementation"] == impl
            and r["layers"] == layers
            and r.get("state") in (None, "every layer")
        )

    fp32 = run("tiny-trained", "float32", "sdpa", 4)
    bf16 = run("tiny-trained", "bfloat16", "sdpa", 4)
    grown = run("tiny-grown", "bfloat16", "sdpa", 42)
    return (
        f"On an {doc['gpu']} (torch {doc['torch'].split('+')[0]}) torch's fused SDPA kernels give "
        f"float32 log-probabilities {fp32['min_diff_at_the_fault_lengths']:.1f} or more away from "
        f"eager attention for a prefill of exactly "
        f"{', '.join(str(n - 1) for n in fp32['failing_at_shipped_tolerance'])} tokens of tiny "
        f"(window 64), and agree within {fp32['max_diff_off_the_fault_lengths']:.0e} at every "
        "other length tested ([benchmarks](benchmarks.md) section 8). In bfloat16 honest "
        f"kernels differ from eager by up to {bf16['max_diff_off_the_fault_lengths']:.2f} on "
        f"tiny ({grown['max_diff_off_the_fault_lengths']:.2f} through 42 layers)."
    )


def window_tps(doc: dict[str, Any]) -> str:
    rows = [r for r in doc["rows"] if r.get("decode_ratio") is not None and r.get("tps")]
    return (
        f"On tiny no window buys TPS: every window row of the trust-margin calibration "
        f"decodes at {span([r['tps'] for r in rows], '.0f')} tok/s on the CPU "
        "([benchmarks](benchmarks.md) section 7), the attention over 8 to 64 tokens being a "
        "sliver of the per-token cost."
    )


def record_scatter(doc: dict[str, Any]) -> str:
    parts = []
    for name in ("undeclared W=24", "int8"):
        runs = [r for r in doc["rows"][name]["per_run"] if r.get("ppl_delta_low") is not None]
        low = min(r["ppl_delta_low"] for r in runs)
        high = max(r["ppl_delta_high"] for r in runs)
        parts.append(f"{low:+.3f} to {high:+.3f} for {name} over {len(runs)} runs")
    return f"Single records of an honest lossy model scatter both ways: {'; '.join(parts)}."


def decode_calibration(budget: dict[str, Any], gpu: dict[str, Any]) -> str:
    """The reference decode's calibration in a sentence: honest rows (CPU, many runs) and
    cheats (H200), each at its mean gap's position under today's allowance."""
    mean_ok = decode_allowances(tiny_budget(), tiny_spec()["integrity"]["reference_decode"])[0]
    honest = {
        name: max(
            (r["reference_decode_mean_gap"] or 0.0) / mean_ok
            for r in row["per_run"]
            if r.get("reference_decode_mean_gap") is not None
        )
        for name, row in budget["rows"].items()
    }
    top = max(honest, key=lambda n: honest[n])
    verdicts: dict[str, int] = {}
    for row in budget["rows"].values():
        for v, n in row["verdicts"].items():
            verdicts[v] = verdicts.get(v, 0) + n
    cheats = {
        r["name"]: (r["mean_gap"] / mean_ok, r["verdict"])
        for r in gpu["runs"]
        if r["name"] in ("DecodeWindow", "DecodeWindow 24/12", "SometimesCheap", "SwitchPath")
    }
    return (
        f"The mean-gap allowance on tiny is {mean_ok:.3f} nats a token. Honest entries on the CPU "
        f"({budget['runs']} runs: {', '.join(budget['rows'])}) sit at up to {honest[top]:.2f} of "
        f"it ({top}); "
        + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items(), reverse=True))
        + ". Cheats that decode lossier than they score, on an H200: "
        + ", ".join(f"{name} at {pos:.2f} ({verdict})" for name, (pos, verdict) in cheats.items())
        + "."
    )


def controls_numbers(
    process: dict[str, Any], sandbox: dict[str, Any], cheats: dict[str, Any]
) -> str:
    honest = list(sandbox["per_run"])
    for d in (process, cheats):
        honest += [
            r for row in d["rows"].values() if row["kind"] == "honest" for r in row["per_run"]
        ]
    loads = [d["machine"]["load_average"][0] for d in (process, sandbox, cheats)]
    return (
        "tiny's numbers are measured on a shared 2-core machine "
        f"([benchmarks](benchmarks.md) section "
        f"16): honest ratios {span([r['controls_ratio'] for r in honest], '.2f')} over "
        f"{len(honest)} runs (the Docker sandbox and the process runner, the baseline engine and "
        f"n-gram speculation) at load averages of {span(loads, '.0f')} and more, worst trials up "
        f"to {max(r['controls_worst_trial'] for r in honest):.1f} (against 4.0), "
        f"{sum(r['verdict'] == 'REJECTED' for r in honest)} REJECTED."
    )


def never_rejected(doc: dict[str, Any]) -> str:
    from calibration.table import allowed_now

    mean_ok, answer_ok, large_ok = allowed_now()
    runs = [r for row in doc["rows"].values() for r in row["per_run"]]
    verdicts: dict[str, int] = {}
    for r in runs:
        verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1

    def top(key: str, allowed: Any) -> float:
        return max(
            (r[key] or 0.0) / (r[allowed] if isinstance(allowed, str) else allowed)
            for r in runs
            if r.get(key) is not None
        )

    floor = float(tiny_spec()["integrity"]["reference_ppl"]["max_lower_nats"])
    lowest = min(r["ppl_delta_low"] for r in runs if r.get("ppl_delta_low") is not None)
    return (
        f"Under the budget rule, at `{str(doc['machine']['git_sha'])[:7]}`: **{doc['runs']} runs, "
        f"{doc['false_rejections']} REJECTED** (`calibration/results/false_rejection-budget.json`, "
        f"[benchmarks](benchmarks.md) section 7): {', '.join(doc['rows'])}; "
        + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items(), reverse=True))
        + ". Their largest positions: the mean gap "
        f"{top('reference_decode_mean_gap', mean_ok):.2f}, "
        f"an answer's mean gap {top('reference_decode_worst_answer', answer_ok):.2f}, the share "
        f"over a nat {top('reference_decode_large_gap_share', large_ok):.2f}, a record's delta "
        f"{-lowest / floor:.2f} of the per-record floor, the left-out share "
        f"{top('same_path_left_out', 'same_path_left_out_allowed'):.2f}, withheld tops "
        f"{top('tops_withheld_share', 'tops_withheld_allowed'):.2f}, self-gap "
        f"{max(r.get('same_path_self_gap') or 0.0 for r in runs):.4f} nats."
    )


REGIONS = [
    Region(
        "tps-stability",
        "measurement",
        (C + "false_rejection-tiny-baseline-hog2.json", C + "stability.json"),
        tps_stability,
    ),
    Region("bounds", "measurement", (TINY, FAST), bounds),
    Region("self-test-fault", "measurement", (B + "attention_cost.json",), self_test),
    Region(
        "decode-calibration",
        "measurement",
        (C + "false_rejection-budget.json", C + "gpu_verify.json"),
        decode_calibration,
    ),
    Region("window-tps", "measurement", (C + "calibration.json",), window_tps),
    Region("record-scatter", "measurement", (C + "false_rejection-budget.json",), record_scatter),
    Region(
        "controls-numbers",
        "measurement",
        (
            C + "false_rejection-controls.json",
            C + "false_rejection-tiny-baseline-controls.json",
            C + "false_rejection-controls-cheats.json",
        ),
        controls_numbers,
    ),
    Region("never-rejected", "measurement", (C + "false_rejection-budget.json",), never_rejected),
]
