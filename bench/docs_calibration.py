"""The regions of ``docs/benchmarks.md`` rendered from ``calibration/results/*.json``: the
calibration table and its trust margins (``calibration.table``, ``calibration.gpu_table``),
the honest rows under the budget rule, false rejections, the trials' stability and the
fresh controls. ``python -m calibration.calibrate --table`` and ``python -m
calibration.gpu_verify --table`` rewrite theirs through ``bench.docs``."""

from __future__ import annotations

import statistics
from typing import Any

from bench.docs_region import Region, machine_line, num, pct, sha, span
from calibration import gpu_table, table, tiny_spec

C = "calibration/results/"


def calibration_rows(doc: dict[str, Any]) -> str:
    return table.rows_text(doc)


def margins_cpu(doc: dict[str, Any]) -> str:
    return table.margin_text(doc)


def gpu_rows(doc: dict[str, Any]) -> str:
    return gpu_table.provenance(doc) + "\n\n" + gpu_table.table(doc)


def margins_gpu(doc: dict[str, Any]) -> str:
    return gpu_table.margins_text(doc)


def _worst(runs: list[dict[str, Any]], key: str, allowed: Any) -> float:
    """The largest position of ``key`` over ``runs``: its value over what is allowed (a
    number, or the key of each run's own allowance)."""
    values = [
        float(r[key]) / float(r[allowed] if isinstance(allowed, str) else allowed)
        for r in runs
        if r.get(key) is not None
    ]
    return max(values, default=0.0)


def budget_honest(doc: dict[str, Any], loaded: dict[str, Any]) -> str:
    mean_ok, answer_ok, large_ok = table.allowed_now()
    floor = tiny_spec()["integrity"]["reference_ppl"]["max_lower_nats"]
    lines = []
    for name, row in doc["rows"].items():
        runs = row["per_run"]
        gaps = [
            r["reference_decode_mean_gap"]
            for r in runs
            if r.get("reference_decode_mean_gap") is not None
        ]
        verdicts = ", ".join(f"{n} {v}" for v, n in sorted(row["verdicts"].items(), reverse=True))
        lowest = min(r["ppl_delta_low"] for r in runs if r.get("ppl_delta_low") is not None)
        lines.append(
            f"| {name} | {row['runs']} | {verdicts} "
            f"| {span(gaps, '.4f')} ({max(gaps) / mean_ok:.2f}) "
            f"| {_worst(runs, 'reference_decode_worst_answer', answer_ok):.2f} "
            f"| {_worst(runs, 'reference_decode_large_gap_share', large_ok):.2f} "
            f"| {max(0.0, -lowest) / floor:.2f} "
            f"| {_worst(runs, 'tops_withheld_share', 'tops_withheld_allowed'):.2f} "
            f"| {_worst(runs, 'same_path_left_out', 'same_path_left_out_allowed'):.2f} "
            f"| {num(max(r.get('same_path_self_gap') or 0.0 for r in runs), '.4f')} "
            f"| {_range(runs, 'controls_ratio', '.2f')} |"
        )
    m = doc["machine"]
    ((lname, lrow),) = loaded["rows"].items()
    lgaps = [r["reference_decode_mean_gap"] for r in lrow["per_run"]]
    lverdicts = ", ".join(f"{n} {v}" for v, n in sorted(lrow["verdicts"].items(), reverse=True))
    return (
        f"{doc['runs']} whole verifications at `{sha(m['git_sha'])}`, {str(m['date'])[:10]}, on "
        f"{m['cores']} CPU cores ({m['cpu']}) with CUDA hidden; {doc['false_rejections']} "
        "REJECTED. Each position is the largest value of a row's runs over what its bound "
        f"allows (mean gap {mean_ok:.3f}, an answer's mean {answer_ok:.2f}, "
        f"{pct(large_ok)} of tokens over a nat, a record {floor} nats under the reference).\n\n"
        "| row | runs | verdicts | mean gap (position) | worst answer | > 1 nat "
        "| lowest record delta | withheld tops | left out | self-gap (nats) | controls ratio |\n"
        "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n"
        + "\n".join(lines)
        + f"\n\nOn the shared 2-core machine with other test suites running "
        f"(`{sha(loaded['machine']['git_sha'])}`): {lname} {lrow['runs']} times, {lverdicts}, "
        f"its mean gap at most {max(lgaps):.3f} ({max(lgaps) / mean_ok:.2f}); "
        f"{loaded['false_rejections']} REJECTED."
    )


def attainable(doc: dict[str, Any]) -> str:
    parts = []
    for machine, res in doc["machines"].items():
        stuck = [res["spenders"][n]["best_ratio"] for n in res["inseparable"]]
        if stuck:
            parts.append(f"{span(stuck, '.2f')} on the {machine.upper()}")
    needed = next(iter(doc["machines"].values()))["needed"]
    return (
        "`python -m calibration.attainable` (from the rows above, nothing is run): for the double "
        "spenders no allowance can separate, the best any allowance that does not fall as e "
        f"grows could reach is {' and '.join(parts)} times the honest rows of no larger loss, "
        f"where {needed:g} is needed."
    )


def _range(runs: list[dict[str, Any]], key: str, spec: str = ".2g") -> str:
    return span([r[key] for r in runs if r.get(key) is not None], spec)


def false_rejection(quiet: dict[str, Any], hog: dict[str, Any]) -> str:
    runs = quiet["per_run"]
    verdicts = ", ".join(f"{n} {v}" for v, n in quiet["verdicts"].items())
    m = quiet["margins"]
    rows = [
        ("verdicts", f"**{verdicts}**: {quiet['false_rejections']} REJECTED"),
        (
            "`integrity.reference-decode` mean gap, share over 1 nat",
            f"{_range(runs, 'reference_decode_mean_gap')} and "
            f"{_range(runs, 'reference_decode_large_gap_share')}",
        ),
        (
            "`ppl.reference-mismatch` deltas (nats per token)",
            f"{m['ppl_delta_low']['min']:.1e} to {m['ppl_delta_high']['max']:.1e}",
        ),
        (
            "timed requests that repeated a prompt",
            span([r["repeated_requests"] for r in runs], "d"),
        ),
        ("`integrity.same-path` agreement", span([r["same_path_fraction"] for r in runs], ".0%")),
        (
            "trials' CV; trials run",
            f"{_range(runs, 'tps_cv', '.3f')}; {span([r['trials_run'] for r in runs], 'd')}",
        ),
        ("wall time", f"median {quiet['wall_s_median']:.1f} s"),
    ]
    hruns = hog["per_run"]
    planned = sum(r["trials_run"] == 3 for r in hruns)
    hverdicts = ", ".join(f"{n} {v}" for v, n in hog["verdicts"].items())
    return (
        f"{machine_line(quiet['machine'])}, nothing else running; {quiet['runs']} runs.\n\n"
        f"| | over {quiet['runs']} runs |\n| --- | --- |\n"
        + "\n".join(f"| {k} | {v} |" for k, v in rows)
        + f"\n\n**On a loaded machine** (`--hog {hog['hogs']}`: busy processes in sessions of "
        f"their own, 3 s on and 3 s off; {machine_line(hog['machine'])}): **{hverdicts}**, "
        f"{hog['false_rejections']} REJECTED. The trials' CV ran from "
        f"{_range(hruns, 'tps_cv', '.3f')}; {planned} runs stopped after the 3 planned trials, "
        f"the others after {span([r['trials_run'] for r in hruns if r['trials_run'] > 3], 'd')}. "
        f"Median wall time {hog['wall_s_median']:.1f} s; "
        f"{max(r['repeated_requests'] for r in hruns)} timed requests repeated a prompt."
    )


def stability(doc: dict[str, Any]) -> str:
    def side(loaded: bool) -> str:
        runs = [r for r in doc["runs"] if r["loaded"] == loaded]
        cvs = " and ".join(format(r["cv"], ".2f") for r in runs)
        cis = " and ".join("±" + format(r["ci"], ".0%") for r in runs)
        return (
            f"CV {cvs}, {' and '.join(sorted({r['status'] for r in runs}))} after "
            f"{span([r['trials_run'] for r in runs], 'd')} trials, their means pinned to "
            f"{cis} against ±{doc['runs'][0]['max_ci']:.0%}"
        )

    return (
        f"{machine_line(doc['machine'])}:\n\n- quiet: {side(False)};\n"
        f"- beside {doc['neighbours']} busy neighbours, all on for {doc['phase_s']:.0f} s and all "
        f"off for {doc['phase_s']:.0f} s: {side(True)}."
    )


def _controls_line(label: str, row: dict[str, Any]) -> str:
    runs = row["per_run"]
    verdicts = ", ".join(f"{n} {v}" for v, n in row["verdicts"].items())
    return (
        f"| {label} | {row['runs']} | {verdicts} "
        f"| {span([r['controls_ratio'] for r in runs], '.3f')} "
        f"| {span([r['controls_worst_trial'] for r in runs], '.2f')} "
        f"| {span([r['trials_run'] for r in runs], 'd')} |"
    )


def controls_honest(
    process: dict[str, Any], sandbox: dict[str, Any], cheats: dict[str, Any]
) -> str:
    lines = [
        _controls_line(f"{name}, process runner (`{sha(process['machine']['git_sha'])}`)", row)
        for name, row in process["rows"].items()
    ]
    lines.append(
        _controls_line(
            f"the sample in the Docker sandbox (`{sha(sandbox['machine']['git_sha'])}`)", sandbox
        )
    )
    lines += [
        _controls_line(f"{name}, beside the replayers (`{sha(cheats['machine']['git_sha'])}`)", row)
        for name, row in cheats["rows"].items()
        if row["kind"] == "honest"
    ]
    honest = list(sandbox["per_run"])
    for d in (process, cheats):
        honest += [
            r for row in d["rows"].values() if row["kind"] == "honest" for r in row["per_run"]
        ]
    ratios = [r["controls_ratio"] for r in honest]
    limit = float(tiny_spec()["integrity"]["controls"]["max_ratio"])
    rejected = sum(r["verdict"] == "REJECTED" for r in honest)
    return (
        "| honest engine | runs | verdicts | ratio | worst trial | trials |\n"
        "| --- | ---: | --- | --- | --- | --- |\n"
        + "\n".join(lines)
        + f"\n\n{len(honest)} honest runs, {rejected} REJECTED; the ratio `r0` ran from "
        f"{span(ratios, '.2f')} (median {statistics.median(ratios):.2f}), the controls' gap "
        f"excess {span([r['controls_gap_excess'] for r in honest], '.2f')}; load averages "
        f"{span([d['machine']['load_average'][0] for d in (process, sandbox, cheats)], '.1f')} "
        f"on 2 shared cores. An engine that knows the whole set could gain `max_ratio / r0` "
        f"unseen: {limit / statistics.median(ratios):.2f}x beside the median run, "
        f"{limit / max(ratios):.2f}x beside the worst."
    )


def controls_cheats(doc: dict[str, Any]) -> str:
    rows = doc["rows"]
    base = rows["honest baseline"]["per_run"][0]["tps_median"]
    lines = []
    for name, row in rows.items():
        r = row["per_run"][0]
        verdict = r["verdict"] + (
            f" ({', '.join(f'`{e}`' for e in r['error_findings'])})" if r["error_findings"] else ""
        )
        lines.append(
            f"| {name} | {verdict} | {r['controls_ratio']:.3g} ({r['controls_worst_trial']:.3g}) "
            f"| {r['tps_median']:,.0f} | {r['tps_median'] / base:.1f}x |"
        )
    return (
        f"{machine_line(doc['machine'])}; one run each.\n\n"
        "| engine | verdict | `integrity.controls` ratio (worst trial) | TPS | against the honest "
        "baseline |\n| --- | --- | --- | ---: | ---: |\n" + "\n".join(lines)
    )


REGIONS = [
    Region("calibration", "benchmarks", (C + "calibration.json",), calibration_rows),
    Region(
        "budget-honest",
        "benchmarks",
        (C + "false_rejection-budget.json", C + "false_rejection-budget-loaded.json"),
        budget_honest,
    ),
    Region("margins-cpu", "benchmarks", (C + "calibration.json",), margins_cpu),
    Region("gpu-rows", "benchmarks", (C + "gpu_verify.json",), gpu_rows),
    Region("margins-gpu", "benchmarks", (C + "gpu_verify.json",), margins_gpu),
    Region("attainable", "benchmarks", (C + "attainable.json",), attainable),
    Region(
        "false-rejection",
        "benchmarks",
        (C + "false_rejection-tiny-baseline.json", C + "false_rejection-tiny-baseline-hog2.json"),
        false_rejection,
    ),
    Region("stability", "benchmarks", (C + "stability.json",), stability),
    Region(
        "controls-honest",
        "benchmarks",
        (
            C + "false_rejection-controls.json",
            C + "false_rejection-tiny-baseline-controls.json",
            C + "false_rejection-controls-cheats.json",
        ),
        controls_honest,
    ),
    Region(
        "controls-cheats",
        "benchmarks",
        (C + "false_rejection-controls-cheats.json",),
        controls_cheats,
    ),
]
