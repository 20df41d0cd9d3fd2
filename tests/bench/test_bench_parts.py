"""The benchmarks' own arithmetic and fixtures: paced engine, interval maths, records."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from factories import checked

from bench import fidelity, noise, views
from bench.common import paced_engine
from podium.signing import KeyPair
from schemas.validate import validate
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


@pytest.mark.serial
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
    validate("record", record)
    assert len(checked([record], keypair).good) == 1
    assert record["verdict"] == "VERIFIED"
    assert views.make_record(keypair, 5)["verdict"] == "REJECTED"


@pytest.mark.serial
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


def test_the_gpu_script_runs_its_whole_path_on_the_cpu_with_a_small_model(tmp_path: Any) -> None:
    """``bench/gpu_e4b.py --tiny``: the GPU run's steps (build, serve, harness with
    fast-gemma's own check settings) on the CPU, so a change to the spec or the harness
    that breaks the GPU script fails here, not only on the GPU machine."""

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
