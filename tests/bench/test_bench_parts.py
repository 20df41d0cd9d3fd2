"""The benchmarks' own arithmetic and fixtures: paced engine, interval maths, records."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from bench import fidelity, noise, verify_cost, views
from bench.common import paced_engine
from leaderboard.records import verify_record
from podium.signing import KeyPair
from verifier.harness.stats import t975


def test_trials_needed_is_the_smallest_n_whose_interval_fits() -> None:
    n = noise.trials_needed(0.01, 0.05)
    assert n == 3
    assert 2 * t975(n - 1) * 0.01 / math.sqrt(n) <= 0.05 < 2 * t975(n - 2) * 0.01 / math.sqrt(n - 1)
    assert noise.trials_needed(0.01, 0.05, half=True) == 3
    assert noise.trials_needed(0.002, 0.05, half=True) == 2


def test_reproduction_risk_is_five_percent_at_the_matching_cv() -> None:
    cv = 0.05 / (math.sqrt(2) * 1.959964)
    assert abs(noise.reproduction_risk(cv) - 0.05) < 1e-4
    assert noise.reproduction_risk(0.0) == 0.0


def test_engine_side_splits_trials_and_measures_turnaround() -> None:
    log = [
        {"line": 0.0, "arrival": 0.0, "due": 1.0, "end": 1.0, "tokens": 10, "client_port": 1},
        {"line": 1.1, "arrival": 1.1, "due": 2.1, "end": 2.1, "tokens": 10, "client_port": 1},
        {"line": 2.2, "arrival": 2.2, "due": 3.2, "end": 3.2, "tokens": 10, "client_port": 1},
        {"line": 3.2, "arrival": 3.2, "due": 4.2, "end": 4.2, "tokens": 10, "client_port": 1},
    ]
    trials = fidelity.engine_side(log, warmup=0, per_trial=2)
    assert [t["tokens"] for t in trials] == [20, 20]
    assert math.isclose(trials[0]["span_s"], 2.1)
    assert [round(g) for g in trials[0]["turnaround_us"]] == [100_000]
    assert [round(g) for g in trials[1]["turnaround_us"]] == [0]


def test_harness_reads_the_paced_engine_rate_within_a_few_percent() -> None:
    with paced_engine(2000) as engine:
        cell = fidelity.run_cell(engine.url, 2000, 1, trials=2, trial_s=0.5)
    assert cell["requests_per_trial"] == 2
    assert all(t["tokens"] == 2 * fidelity.MAX_TOKENS for t in cell["trials"])
    # the engine never delivers more than its rate, and the harness agrees with its clock
    assert all(t["engine_vs_nominal"] <= 1e-6 for t in cell["trials"])
    assert cell["max_abs_error_vs_engine"] < 0.05


def test_synthetic_leaderboard_records_are_schema_valid_and_signed() -> None:
    keypair = KeyPair.generate()
    record = views.make_record(keypair, 7)
    verify_record(record, keypair.public_key)
    assert record["verdict"] == "VERIFIED"
    assert views.make_record(keypair, 5)["verdict"] == "REJECTED"


def test_proxy_bench_measures_the_gate_against_the_same_upstream_in_both_sizes() -> None:
    from bench import proxy_latency

    sizes = proxy_latency.run(quick=True)["sizes"]
    assert [s["max_tokens"] for s in sizes] == [1, 512]
    for size in sizes:
        assert len(size["rounds"]) == 5
        assert 0 < size["direct_us_median"] < size["proxied_us_median"]
        assert size["overhead_us_min"] <= size["overhead_us_median"] <= size["overhead_us_max"]


def test_vllm_tiny_summary_takes_medians_per_engine_and_their_ratios() -> None:
    from bench.vllm_tiny import summary

    def run(engine: str, tps: float, ppl: float, startup: float, wall: float) -> dict[str, Any]:
        return {
            "engine": engine, "verdict": "VERIFIED", "tps": tps, "ppl": ppl,
            "startup_s": startup, "wall_s": wall,
        }  # fmt: skip

    out = summary(
        [
            run("baseline", 700.0, 23.4, 3.0, 34.0),
            run("vllm", 380.0, 23.4, 38.0, 68.0),
            run("vllm", 390.0, 23.4, 37.0, 70.0),
            run("baseline", 680.0, 23.4, 3.0, 36.0),
        ]
    )
    assert out["baseline"]["tps"] == 690.0 and out["vllm"]["tps"] == 385.0
    assert out["ratios_vllm_over_baseline"]["wall_s"] == 69.0 / 35.0
    assert out["vllm"]["verdicts"] == ["VERIFIED", "VERIFIED"]
    assert out["ppl_relative_difference"] == 0.0
    assert "vllm-mtp" not in out and "ratios_mtp_over_vllm" not in out
    mtp = {**run("vllm-mtp", 570.0, 23.4, 40.0, 72.0), "acceptance_rate": 0.75}
    with_mtp = summary(
        [run("baseline", 700.0, 23.4, 3.0, 34.0), run("vllm", 380.0, 23.4, 38.0, 68.0), mtp]
    )
    assert with_mtp["vllm-mtp"]["acceptance_rate"] == 0.75
    assert with_mtp["ratios_mtp_over_vllm"]["tps"] == 570.0 / 380.0


def test_http_clients_take_turns_and_ratios_are_taken_within_a_round() -> None:
    from bench import http_clients

    orders = [http_clients.rotated(http_clients.CLIENTS, r) for r in range(3)]
    assert [o[0] for o in orders] == ["h11", "legacy", "httpx"], "each goes first once"

    def row(tps: float, us: float) -> dict[str, float]:
        return {
            "harness_tps": tps,
            "error_vs_engine": -0.001,
            "error_vs_nominal": -0.002,
            "client_us_per_request": us,
            "harness_cpu_us_per_token": us / 500,
        }

    rounds = [
        {"h11": row(100, 200), "legacy": row(101, 100), "httpx": row(98, 800)},
        {"h11": row(50, 400), "legacy": row(51, 200), "httpx": row(49, 1600)},  # a slow round
    ]
    cell = http_clients.summarize_cell(100, 1, rounds)
    assert cell["vs_h11"]["legacy"]["client_time_ratio"] == 0.5
    assert cell["vs_h11"]["httpx"]["client_time_ratio"] == 4.0
    assert math.isclose(cell["vs_h11"]["httpx"]["tps_ratio"], (0.98 + 0.98) / 2)
    assert cell["clients"]["h11"]["client_us_per_request_median"] == 300


def test_the_httpx_wire_reads_the_paced_engine_like_the_harness_wire() -> None:
    from bench import http_clients

    with paced_engine(0) as engine:
        cells = {
            name: fidelity.run_cell(engine.url, 0, 1, 1, 0.1, cls)
            for name, cls in http_clients.CLIENT_CLASSES.items()
        }
    tokens = {name: cell["trials"][0]["tokens"] for name, cell in cells.items()}
    assert set(tokens.values()) == {fidelity.UNPACED_REQUESTS * fidelity.MAX_TOKENS}, tokens


def test_the_gpu_script_runs_its_whole_path_on_the_cpu_with_a_small_model(tmp_path: Any) -> None:
    """``bench/gpu_e4b.py --tiny``: the GPU run's steps (build, serve, harness with
    fast-gemma's own check settings) on the CPU, so a change to the spec or the harness
    that breaks the GPU script fails here, not only on the GPU machine."""
    import json

    from bench import gpu_e4b

    out = tmp_path / "out"
    # 64-token answers: the same steps as 512, an eighth of the per-token engine's time
    args = ["--tiny", "--max-tokens", "64", "--out", str(out), "--workdir", str(tmp_path / "work")]
    code = gpu_e4b.main(args)
    result = json.loads((out / "gpu_e4b.json").read_text())
    harness = result["harness"]
    assert code == 0 and harness["failure"] is None, harness["failure"]
    assert [s["status"] for s in harness["stages"]] == ["ok"] * len(harness["stages"])
    assert len(harness["tps"]["trials"]) == 3 and harness["tps"]["median"] > 0
    ran = {c["id"] for c in harness["checks"]}
    assert {"integrity.caching", "integrity.lengths", "tps.prompt-mismatch"} <= ran


def test_verify_cost_reads_a_reports_stages_and_the_two_cost_ratios(tmp_path: Path) -> None:
    report = {
        "started": "2026-12-02T00:00:00+00:00",
        "finished": "2026-12-02T00:00:20+00:00",
        "metrics": {"tps": {"mean": 250.0, "trials": [{"tps": 250.0, "passes": 2}]}},
        "stages": [
            {"name": "tokenizer", "seconds": 4.0, "status": "ok"},
            {"name": "reference-load", "seconds": 1.0, "status": "ok"},
            {"name": "evaluation", "seconds": 9.0, "status": "ok"},
            {"name": "reference", "seconds": 1.0, "status": "ok"},
            {"name": "reference", "seconds": 0.5, "status": "ok"},
        ],
    }
    (tmp_path / "report.json").write_text(json.dumps(report))
    out = verify_cost.stages_of(tmp_path / "report.json")
    assert out["stages"] == {
        "tokenizer": 4.0,
        "reference-load": 1.0,
        "evaluation": 9.0,
        "reference": 1.5,
    }
    assert out["report_wall_s"] == 20.0
    assert out["tps"] == 250.0 and out["trials"] == [[250.0, 2]]
    assert math.isclose(out["reference_share"], 1.5 / 20)
    assert math.isclose(out["reference_stages_share"], 2.5 / 20)
    assert math.isclose(out["wall_over_evaluation_and_reference"], 20 / 10.5)
    assert verify_cost.stages_of(tmp_path / "missing.json") == {}
