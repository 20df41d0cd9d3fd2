"""The regions of ``docs/benchmarks.md`` rendered from ``bench/results/*.json``: each a pure
function of the files it names (``bench.docs`` compares and rewrites them)."""

from __future__ import annotations

import statistics
from typing import Any

from bench.docs_region import Region, commas, machine_line, num, pct, span

R = "bench/results/"
#: the fidelity goals (docs/benchmarks.md section 1): timing error against the engine's
#: clock, and the loop's loss against the nominal rate
TIMING_GOAL = 0.001
NOMINAL_GOAL = 0.005
#: the trial CVs the sizing table reads, with what each stands for
SIZING_CVS = (
    (0.002, ""),
    (0.004, " (within a job in the real challenge)"),
    (0.01, ""),
    (0.03, " (between jobs in the real challenge)"),
    (0.05, ""),
)


def _rate(cell: dict[str, Any]) -> str:
    return "unpaced" if not cell["rate"] else commas(cell["rate"])


def _median_abs(cell: dict[str, Any]) -> float:
    return statistics.median(abs(t["error_vs_engine"]) for t in cell["trials"])


def fidelity(doc: dict[str, Any]) -> str:
    rows = []
    for c in doc["cells"]:
        nominal = c["median_error_vs_nominal"]
        rows.append(
            f"| {_rate(c)} | {c['concurrency']} | {commas(c['nominal_tps']) if c['rate'] else '—'} "
            f"| {commas(c['harness']['median'], 1 if c['rate'] else 0)} "
            f"| {commas(c['engine_tps_median'], 1 if c['rate'] else 0)} "
            f"| {pct(_median_abs(c), 3)} | {pct(c['max_abs_error_vs_engine'], 3)} "
            f"| {'—' if nominal is None else pct(nominal, 2)} "
            f"| {c['client_us_per_request'] / 1000:.2f} ms | {pct(c['client_share'], 2)} "
            f"| {c['overshoot_us_median'] / 1000:.2f} ms | {c['harness_cpu_us_per_token']:.2f} µs |"
        )
    return (
        f"{machine_line(doc['machine'], doc['load_average_after'])}; "
        f"{doc['trials_per_cell']} trials of about {doc['target_trial_s']:.0f} s per cell.\n\n"
        "| R per stream (tok/s) | c | nominal | harness (median) | engine clock (median) "
        "| error vs engine clock, median trial | worst trial | error vs nominal (median) "
        "| harness time per request | engine waiting for the harness "
        "| engine overshoot per request | harness CPU per token |\n"
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n"
        + "\n".join(rows)
        + "\n\n"
        + _fidelity_reading(doc)
    )


def _fidelity_reading(doc: dict[str, Any]) -> str:
    paced = [c for c in doc["cells"] if c["rate"]]
    medians = [_median_abs(c) for c in paced]
    missed = [c for c in paced if c["max_abs_error_vs_engine"] > TIMING_GOAL]
    worst = max(paced, key=lambda c: c["max_abs_error_vs_engine"])

    def met_up_to(conc: int) -> str:
        cells = [c for c in paced if c["concurrency"] == conc]
        ok = [c for c in cells if abs(c["median_error_vs_nominal"]) <= NOMINAL_GOAL]
        top = max(ok, key=lambda c: c["rate"]) if ok else None
        bad = [c for c in cells if abs(c["median_error_vs_nominal"]) > NOMINAL_GOAL]
        first = min(bad, key=lambda c: c["rate"]) if bad else None
        text = f"up to {commas(top['rate'])} tok/s" if top else "nowhere"
        if first is not None:
            miss = pct(first["median_error_vs_nominal"], 2)
            text += f", missed from {commas(first['rate'])} ({miss})"
        return text

    cpu = [c["harness_cpu_us_per_token"] for c in paced]
    unpaced = {c["concurrency"]: c["harness"]["median"] for c in doc["cells"] if not c["rate"]}
    return (
        f"- **Timing error** (goal {pct(TIMING_GOAL)} against the engine's clock): the median "
        f"trial of every paced cell is within {pct(max(medians), 3)}; single trials miss it in "
        f"{len(missed)} of {len(paced)} cells, the worst by "
        f"{pct(worst['max_abs_error_vs_engine'])} "
        f"({commas(worst['rate'])} tok/s, c = {worst['concurrency']}).\n"
        f"- **Error against the nominal rate** (goal {pct(NOMINAL_GOAL)}): met single stream "
        f"{met_up_to(1)}; at concurrency 8 {met_up_to(8)}.\n"
        f"- **Harness cost**: {span(cpu, '.1f', ' µs')} of CPU per generated token; against an "
        f"engine that answers at once it drives {commas(unpaced.get(1, 0))} tok/s single stream "
        f"and {commas(unpaced.get(8, 0))} at concurrency 8."
    )


def anchor(doc: dict[str, Any]) -> str:
    s = doc["summary"]

    def ratio(key: str) -> str:
        x = s[key]
        return (
            f"**{x['median']:.3f}** at the median "
            f"({x['min']:.3f} to {x['max']:.3f}, sd {x['stdev']:.3f})"
        )

    tps = {k: [r[k]["tps"] for r in doc["rounds"]] for k in ("podium", "guidellm", "openai")}
    paced = doc["paced"]
    order = sorted(paced["median"], key=lambda k: -paced["median"][k])
    names = {"podium": "podium", "openai": "`openai` loop", "guidellm": "guidellm"}
    paced_rows = "\n".join(
        f"| {names[k]} | {paced['median'][k]:.1f} | {pct(paced['median_error_vs_rate'][k])} |"
        for k in order
    )
    above = sum(r["ratio_podium_guidellm"] > 1 for r in doc["rounds"])
    return (
        f"guidellm {doc['guidellm']}, openai {doc['openai']}; {len(doc['rounds'])} rounds of "
        f"{doc['prompts']} prompts × {doc['max_tokens']} tokens; "
        f"{machine_line(doc['machine'], doc['load_average_after'])}. Against the model, podium "
        f"over guidellm {ratio('ratio_podium_guidellm')}, above it in {above} of the "
        f"{len(doc['rounds'])} rounds; podium over the `openai` loop "
        f"{ratio('ratio_podium_openai')}. The rounds' TPS moved with the machine: podium "
        f"{span(tps['podium'], '.0f')}, guidellm {span(tps['guidellm'], '.0f')}, openai "
        f"{span(tps['openai'], '.0f')} tok/s. Against the paced engine at "
        f"{commas(paced['rate'])} tokens/s a request (median of {len(paced['rounds'])} rounds):\n\n"
        "| tool | median TPS | vs the paced rate |\n| --- | --- | --- |\n" + paced_rows
    )


def _sci(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def ppl(doc: dict[str, Any]) -> str:
    labels = {
        "engine_one_pass": "whole prompt in one pass (the default for a small vocabulary)",
        "engine_chunks_of_16": "chunks of 16 positions through the KV cache (how 262k-vocabulary "
        "prompts fit a 24 GB card)",
    }
    rows = []
    for key, label in labels.items():
        c = doc[key]
        rel = "0 (bit-identical)" if c["rel_diff_ppl"] == 0 else f"{c['rel_diff_ppl']:.1e}"
        rows.append(
            f"| {label} | {c['engine_ppl']:.9f} | {c['direct_ppl']:.9f} | {rel} "
            f"| {_sci(c['rel_diff_nll'])} | {_sci(c['max_rel_diff_record_nll'])} "
            f"| {', '.join(c['findings']) or 'none'} |"
        )
    worst = max(doc[k]["rel_diff_ppl"] for k in labels)
    return (
        f"{doc['records']} records of `{doc['source']}` "
        f"({commas(doc['engine_one_pass']['tokens'])} "
        f"target tokens); {machine_line(doc['machine'])}.\n\n"
        "| engine scoring | engine PPL | direct PPL | relative difference of PPL | of total NLL "
        "| worst record's NLL | findings |\n| --- | --- | --- | --- | --- | --- | --- |\n"
        + "\n".join(rows)
        + f"\n\nGoal ({doc['goal']:.0e} in float32 on the CPU): "
        + ("met" if worst <= doc["goal"] else "**missed**")
        + f", the largest difference {worst:.1e}."
    )


def noise(doc: dict[str, Any]) -> str:
    rows = "\n".join(
        f"| {i} | {r['median']:.1f} | {r['mean']:.1f} | {pct(r['cv'], 2)} "
        f"| {min(r['trials']):.1f} – {max(r['trials']):.1f} |"
        for i, r in enumerate(doc["runs"], 1)
    )
    w = doc["workload"]
    return (
        f"{len(doc['runs'])} runs, each a fresh baseline engine process and {w['trials_per_run']} "
        f"timed trials of {w['prompts']} prompts × {w['max_tokens']} tokens; "
        f"{machine_line(doc['machine'], doc['load_average_after'])}.\n\n"
        "| run | median TPS | mean | CV of trials | range of trials |\n"
        "| --- | --- | --- | --- | --- |\n" + rows + "\n\n"
        f"- **Within a run** (trial to trial, pooled): CV **{pct(doc['within_run_cv'])}**.\n"
        f"- **Between runs** (the runs' medians: repeated verifications of one engine): CV "
        f"**{pct(doc['between_run_cv'], 0)}**.\n"
        f"- **Trials needed** for a 95 % t-interval of the mean within the "
        f"{pct(doc['tolerance'], 0)} reproduction tolerance at that trial CV: "
        f"**{doc['trials_needed_width']}** for the whole width, "
        f"**{doc['trials_needed_half_width']}** "
        f"for the half-width; the spec's {doc['spec_trials']} trials give an interval "
        f"{pct(doc['ci_width_at_spec_trials'], 0)} wide.\n"
        f"- **Two honest verifications differ by more than {pct(doc['tolerance'], 0)}** with "
        f"probability **{pct(doc['reproduction_risk'], 0)}** at that run-to-run CV."
    )


def noise_sizing(doc: dict[str, Any]) -> str:
    from bench.noise import reproduction_risk, trials_needed

    tol = doc["tolerance"]
    lines = []
    for cv, note in SIZING_CVS:
        risk = reproduction_risk(cv, tol)
        lines.append(
            f"| {pct(cv)}{note} | {trials_needed(cv, tol)} | {trials_needed(cv, tol, half=True)} "
            f"| {'~0' if risk < 5e-5 else pct(risk, 2 if risk < 0.01 else 0)} |"
        )
    return (
        f"| trial CV | trials (width ≤ {pct(tol, 0)}) | trials (half-width ≤ {pct(tol, 0)}) "
        f"| P(two runs differ by > {pct(tol, 0)}) |\n| --- | --- | --- | --- |\n" + "\n".join(lines)
    )


def gpu_e4b(doc: dict[str, Any]) -> str:
    b, h, g = doc["build"], doc["harness"], doc["gpu"]
    t = h["tps"]
    stages = {s["name"]: s["seconds"] for s in h["stages"]}
    per_token = [tr["harness_cpu_s_per_token"] * 1e6 for tr in t["trials"]]
    gib = 2**30
    rows = [
        ("parameters (random bf16 weights)", commas(b["parameters"])),
        (
            f"build on the GPU / direct PPL pass / save ({b['checkpoint_bytes'] / 1e9:.1f} GB)",
            f"{b['build_s']:.1f} s / {b['direct_ppl_s']:.1f} s / {b['save_s']:.1f} s",
        ),
        ("engine start-up (load the checkpoint, ready)", f"{doc['engine_start_s']:.1f} s"),
        (
            "GPU memory after load / peak during the run",
            f"{g['after_load_bytes'] / gib:.1f} GiB / {g['peak_bytes'] / gib:.1f} GiB",
        ),
        (
            f"stage `evaluation` ({len(t['trials'])} trials, {h['ppl']['records']} PPL records "
            "and the probes among them)",
            f"{stages['evaluation']:.1f} s (warm-up {h['warmup_s']:.1f} s)",
        ),
        (
            f"TPS per trial ({t['tokens_per_trial'] // t['max_tokens']} x {t['max_tokens']} "
            "tokens each)",
            ", ".join(f"{tr['tps']:.2f}" for tr in t["trials"]),
        ),
        (
            "TPS median, CV, 95 % CI",
            f"{t['median']:.2f}, {pct(t['cv'])}, [{t['ci95'][0]:.2f}, {t['ci95'][1]:.2f}]",
        ),
        (
            "harness CPU / harness wall time",
            f"{h['cpu_s']:.2f} s / {h['wall_s']:.1f} s: **{pct(h['cpu_share'], 2)}**",
        ),
        ("harness CPU per generated token", span(per_token, ".0f", " µs")),
        (
            "engine NLL vs direct NLL (bf16)",
            f"relative difference {doc['ppl_vs_direct']['rel_diff_nll']:.1e}",
        ),
    ]
    a = doc["a10g_estimate"]
    return (
        f"{g['name']}, {machine_line(doc['machine'])}; `{doc['command'].split(' --')[0]}`.\n\n"
        "| what | measured |\n| --- | --- |\n"
        + "\n".join(f"| {k} | {v} |" for k, v in rows)
        + f"\n\nThe baseline decodes the E4B shape at **{t['median']:.1f} tokens/s** on this GPU, "
        f"its harness {pct(h['cpu_share'], 1)} of the wall time. `ppl.cap` fails, as it must with "
        f"random weights (PPL {commas(h['ppl']['value'])}). **A10G estimate (not a measurement)**: "
        f"{a['tps']:.1f} tokens/s ({a['note'].split(': ', 1)[-1]})."
    )


def views(doc: dict[str, Any]) -> str:
    p, t, pe = doc["in_process"], doc["terminal"], doc["page"]
    show = t["runs"]["show"]
    rows = [
        (
            "**the checked view** (reading the store and `leaderboard.checked.check_snapshot`: "
            "what every view starts from)",
            f"**{p['checked_view_s']:.2f} s**: reading {p['read_store_s']:.2f} s, checking "
            f"{p['check_s']:.2f} s",
        ),
        (
            "the set check alone (`leaderboard.setcheck`: the head's signature, its leaves' "
            "Merkle root, every file's sha256 against its leaf, the viewer's memory of heads)",
            f"{p['set_check_s']:.2f} s",
        ),
        (
            "checking every row's own signature (`check_rows`, what a row the head does not "
            "list takes)",
            f"{p['check_each_signature_s']:.2f} s",
        ),
        ("parsing the rows and nothing else (`--no-verify`)", f"{p['parse_only_s']:.2f} s"),
        (
            "ranking / rendering the table in-process",
            f"{p['rank_s']:.2f} s / {p['render_s']:.2f} s",
        ),
        (
            "`podium leaderboard show --json` (fresh process)",
            f"{t['show_json_s']:.2f} s checked, {t['show_json_no_verify_s']:.2f} s with "
            "`--no-verify`",
        ),
        (
            "`podium leaderboard show` (table to a pipe, fresh process)",
            f"{t['show_s']:.2f} s ({min(show):.2f} to {max(show):.2f}); interpreter and imports "
            f"{t['import_cli_s']:.2f} s",
        ),
        (
            "web page (`podium leaderboard serve --pubkey`, headless Chromium)",
            f"{pe['render_ms']} ms in the page; the first `/records.json` "
            f"({pe['records_json_bytes'] / 1e6:.1f} MB) {pe['first_records_json_s']:.2f} s, a "
            f"refresh {pe['refresh_records_json_s']:.2f} s; Chromium's whole run "
            f"{pe['chromium_wall_s']:.2f} s against {doc['page_empty']['chromium_wall_s']:.2f} s "
            "for an empty store",
        ),
    ]
    verdict = "met" if p["checked_view_s"] <= 1.0 else "**missed**"
    return (
        f"{commas(doc['records'])} records; "
        f"{machine_line(doc['machine'], doc['load_average_after'])}"
        "; median of 3.\n\n| view | time |\n| --- | --- |\n"
        + "\n".join(f"| {k} | {v} |" for k, v in rows)
        + f"\n\nThe checked view of {commas(doc['records'])} records takes "
        f"{p['checked_view_s']:.2f} s: the one-second goal is {verdict} at this load."
    )


REGIONS = [
    Region("fidelity", "benchmarks", (R + "fidelity.json",), fidelity),
    Region("anchor", "benchmarks", (R + "anchor.json",), anchor),
    Region("ppl", "benchmarks", (R + "ppl.json",), ppl),
    Region("noise", "benchmarks", (R + "noise.json",), noise),
    Region("noise-sizing", "benchmarks", (R + "noise.json",), noise_sizing),
    Region("gpu-e4b", "benchmarks", (R + "gpu_e4b.json",), gpu_e4b),
    Region("views", "benchmarks", (R + "views.json",), views),
]


def _attention(doc: dict[str, Any], **match: Any) -> dict[str, Any]:
    runs = doc["runs"] + [{**r, "of_layers": 42} for r in doc["whole_depth_runs"]]
    for r in runs:
        if all(r.get(k) == v for k, v in match.items()):
            return dict(r)
    raise KeyError(f"no attention_cost run with {match}")


def self_test_cost(doc: dict[str, Any]) -> str:
    e4b = {"model": "e4b-random", "dtype": "bfloat16", "implementation": "sdpa"}
    whole = [r for r in doc["whole_depth_runs"] if r["implementation"] == "sdpa"]
    former = next(r for r in whole if r.get("state") == "the former 44 lengths")
    chosen = [r for r in whole if r["lengths"] != former["lengths"] and r["dtype"] == "bfloat16"]
    cold_all = next(r for r in chosen if r.get("state") == "cold")
    warm_all = next(r for r in chosen if r.get("state") is None)
    cold = _attention(doc, state="cold", layers=6, **e4b)
    warm = _attention(doc, state=None, layers=6, **e4b)
    eager = _attention(doc, layers=6, model="e4b-random", dtype="bfloat16", implementation="eager")
    f = doc["a10g_factor"]
    rows = [
        ("every length to 17 and around 4 windows, every layer", former, None, former),
        ("the chosen lengths, every layer", warm_all, cold_all, warm_all),
        ("**the chosen lengths, first 6 layers (shipped)**", warm, cold, warm),
        ("eager's own test, after a failed path (shipped)", eager, None, eager),
    ]
    lines = "\n".join(
        f"| {label} | {r['lengths']} | {r['layers']} "
        f"| {num(c['seconds'], '.1f') + ' s' if c else ''} "
        f"| {w['seconds']:.1f} s | {w['seconds'] * f:.1f} s |"
        for label, r, c, w in rows
    )
    slow = sorted((p for p in cold["per_length"] if p["s"] > 0.5), key=lambda p: p["length"])
    return (
        f"{doc['gpu']} (driver {doc['driver']}, torch {doc['torch']}), "
        f"{machine_line(doc['machine'])}; `{doc['command'].split(' --')[0]}`.\n\n"
        "| self-test at the E4B shape, bf16 | lengths | layers | H200, first GPU work (cold) "
        f"| H200, warm | A10G ESTIMATE ({f:g} × warm) |\n| --- | --- | --- | --- | --- | --- |\n"
        + lines
        + f"\n\nThe shipped test costs {warm['seconds'] * f:.1f} s of an A10G's reference stage "
        f"warm, estimated ({(warm['seconds'] + eager['seconds']) * f:.1f} s when the served path "
        f"fails and eager's own test follows). Cold, {len(slow)} lengths take over 0.5 s each "
        f"({', '.join(str(p['length']) for p in slow)}; "
        f"{sum(p['s'] for p in slow):.1f} s of the {cold['seconds']:.1f} s): the first use of "
        "kernels at those shapes in the process, not the test's arithmetic."
    )


def _g(x: float) -> str:
    """A log-probability difference at the precision a reader needs."""
    if x >= 1:
        return f"{x:.1f}"
    if x >= 0.01:
        return f"{x:.2f}"
    return f"{x:.4f}" if x >= 0.001 else f"{x:.0e}"


def self_test_tolerance(doc: dict[str, Any]) -> str:
    runs = doc["runs"] + [{**r, "of_layers": 42} for r in doc["whole_depth_runs"]]
    groups: dict[tuple[str, str, int, int], dict[str, dict[str, Any]]] = {}
    for r in runs:
        if r.get("state") in ("cold", "the former 44 lengths"):
            continue
        key = (r["model"], r["dtype"], r["layers"], r["of_layers"])
        groups.setdefault(key, {})[r["implementation"]] = r
    names = {
        "e4b-random": "E4B shape, random weights",
        "tiny-trained": "tiny, trained",
        "tiny-grown": "tiny grown to 42 layers",
    }
    order = list(names)
    lines = []
    for (model, dtype, layers, of), impl in sorted(
        groups.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1] != "bfloat16", kv[0][2])
    ):
        sdpa, eager, broken = impl.get("sdpa"), impl.get("eager"), impl.get("podium-test-broken")
        if sdpa is None:
            continue
        at_fault, off = (
            sdpa["min_diff_at_the_fault_lengths"],
            sdpa["max_diff_off_the_fault_lengths"],
        )
        fault = at_fault > 1 and off < 0.01
        at = _g(at_fault)
        lines.append(
            f"| {names.get(model, model)} | {'bf16' if dtype == 'bfloat16' else 'fp32'} "
            f"| {layers} of {of} | {_g(off if fault else sdpa['worst_diff'])} "
            f"| {f'**{at} (the fault)**' if fault else at} "
            f"| {_g(eager['worst_diff']) if eager else ''} "
            f"| {_g(broken['min_diff_at_the_fault_lengths']) if broken else ''} |"
        )
    return (
        "| model | dtype | layers tested | sdpa, honest max | at 64k + 1 | eager's own test "
        "| `BROKEN` at 64k + 1 |\n| --- | --- | --- | --- | --- | --- | --- |\n" + "\n".join(lines)
    )


REGIONS += [
    Region("self-test-cost", "benchmarks", (R + "attention_cost.json",), self_test_cost),
    Region("self-test-tolerance", "benchmarks", (R + "attention_cost.json",), self_test_tolerance),
]
