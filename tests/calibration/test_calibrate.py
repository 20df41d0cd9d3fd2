"""The parts of ``python -m calibration.calibrate``: its bundles, its table, its docs text.

The rows themselves are whole verifications (about 30 s each on a 2-core machine); the
script runs them. Here: what a row's bundle declares, and the pure arithmetic from
reports to the table, the expectations and the text its docs regions render
(``tests/bench/test_docs_numbers.py`` checks the regions themselves).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from calibration.rows import LEFT_OUT, Row, rows
from calibration.run_row import bundle_member, make_source
from calibration.summary import summarise
from calibration.table import allowed_now, markdown_table, rows_text
from submission.bundle import package
from verifier.declared import declared_model

CAP = 23.404752 * 1.05


def _report(
    verdict: str,
    ppl: float,
    errors: tuple[str, ...] = (),
    *,
    caching: str = "pass",
    missing: str | None = None,
) -> dict[str, Any]:
    findings: list[dict[str, Any]] = [
        {"check_id": e, "severity": "error", "message": "x"} for e in errors
    ]
    if missing:
        findings.append(
            {
                "check_id": "verdict.checks-missing",
                "severity": "warning",
                "message": f"required checks did not pass: {missing}",
            }
        )
    decode = {
        "id": "integrity.reference-decode",
        "status": "pass",
        "details": {
            "mean_gap": 0.03,
            "worst_answer": {"record": 3, "mean_gap": 0.2},
            "large_gap_share": 0.01,
            "tokens": 1408,
            "reported_scoring_loss": 0.02,
            "allowance": {
                "rule": "budget",
                "mean": 0.06,
                "answer": 0.36,
                "large_share": 0.04,
                "budget": 0.0488,
            },
            "reference_model": {"applied": {}, "budgeted": {"QUANTIZATION": "int8"}},
        },
    }
    return {
        "verdict": verdict,
        "findings": findings,
        "failure": None,
        "metrics": {"ppl": {"value": ppl}, "tps": {"median": 400.0}},
        "checks": [decode, {"id": "integrity.caching", "status": caching}],
    }


def _row(kind: str = "honest") -> Row:
    return Row("int8", kind, config={"QUANTIZATION": "int8"})


def test_every_row_has_a_unique_name_and_no_robustness_test_is_among_them() -> None:
    names = [r.name for r in rows()]
    assert len(names) == len(set(names))
    assert not {r.engine.rsplit(":", 1)[-1] for r in rows()} & set(LEFT_OUT)
    assert {r.name for r in rows() if r.vllm} >= {"vLLM KV fp8", "vLLM fp8 weights"}


def test_a_rows_knobs_reach_the_frozen_config_the_verifier_reads(tmp_path: Path) -> None:
    row = Row("W=16 bf16", "honest", config={"SLIDING_WINDOW": 16, "DTYPE": "bfloat16"})
    src = make_source(row, tmp_path)
    packaged = package(src, tmp_path / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    frozen = json.loads(bundle_member(packaged.bundle.path, "engine-config.json"))
    assert frozen["SLIDING_WINDOW"] == 16 and frozen["DTYPE"] == "bfloat16"
    model = declared_model(frozen, "float32")
    assert model.sliding_window == 16 and model.dtype == "bfloat16"
    assert (src / "engine" / "doubles" / "decode.py").is_file()


def test_the_expectation_of_each_kind() -> None:
    def meets(kind: str, report: dict[str, Any]) -> bool:
        return bool(summarise(_row(kind), report, model_ppl=23.404752, cap=CAP)["meets"])

    assert meets("honest", _report("VERIFIED", 23.4))
    assert not meets("honest", _report("REJECTED", 23.4, ("integrity.reference-decode",)))
    assert meets("honest", _report("REJECTED", 26.3, ("ppl.cap",)))
    assert not meets("honest", _report("REJECTED", 26.3, ("ppl.cap", "integrity.same-path")))
    assert meets("cheat", _report("REJECTED", 23.4, ("integrity.reference-decode",)))
    assert not meets("cheat", _report("VERIFIED", 23.4))
    assert not meets("cheat", _report("FAILED", 23.4))


def test_a_vllm_row_packages_the_vllm_example_with_its_option(tmp_path: Path) -> None:
    row = next(r for r in rows() if r.name == "vLLM KV fp8")
    src = make_source(row, tmp_path)
    packaged = package(src, tmp_path / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    frozen = json.loads(bundle_member(packaged.bundle.path, "engine-config.json"))
    assert frozen["KV_CACHE_DTYPE"] == "fp8" and frozen["DTYPE"] == "float32"
    assert not (src / "engine" / "doubles").exists()  # vLLM, not the cheats


def test_an_option_vllm_refuses_at_start_is_said_so_and_nothing_else_passes_for_it() -> None:
    row = next(r for r in rows() if r.name == "vLLM fp8 weights")
    refused = _report("FAILED", 0.0)
    refused["metrics"] = {}
    refused["failure"] = {
        "stage": "ready",
        "message": "the engine exited before it was ready",
        "log_tail": "RuntimeError: Engine core initialization failed. See root cause above.\n",
    }
    log = (
        "(APIServer) WARNING ulimit: errors like `OSError: [Errno 24] Too many open files`\n"
        "(Worker) ERROR ValueError: fp8 quantization is not supported on CPU\n"
        "RuntimeError: Engine core initialization failed. See root cause above.\n"
    )
    s = summarise(row, refused, model_ppl=23.404752, cap=CAP, log=log)
    assert s["meets"] and s["refusal"] == "ValueError: fp8 quantization is not supported on CPU"
    assert "refused: ValueError" in markdown_table([s])
    later = {**refused, "failure": {**refused["failure"], "stage": "evaluation"}}
    s = summarise(row, later, model_ppl=23.404752, cap=CAP)
    assert not s["meets"] and s["refusal"] is None  # a run that broke later is a miss


def test_a_skipped_caching_check_alone_is_judged_verified_and_said_so() -> None:
    report = _report("UNOFFICIAL", 23.4, caching="skip", missing="integrity.caching")
    s = summarise(_row(), report, model_ppl=23.404752, cap=CAP)
    assert s["verdict"] == "UNOFFICIAL" and s["judged"] == "VERIFIED" and s["meets"]
    assert "but for the caching skip" in markdown_table([s])
    other = _report("UNOFFICIAL", 23.4, caching="skip", missing="integrity.caching, tps.unstable")
    assert not summarise(_row(), other, model_ppl=23.404752, cap=CAP)["meets"]


def test_an_unstable_clock_alone_is_told_apart_from_a_trust_checks_miss() -> None:
    def summary(kind: str, report: dict[str, Any]) -> dict[str, Any]:
        return summarise(_row(kind), report, model_ppl=23.404752, cap=CAP)

    noisy = summary("honest", _report("FAILED", 23.4, ("tps.unstable",)))
    assert not noisy["meets"] and noisy["noise_only"]
    over = summary("honest", _report("REJECTED", 26.3, ("ppl.cap", "tps.unstable")))
    assert not over["meets"] and over["noise_only"]
    both = summary("honest", _report("REJECTED", 23.4, ("integrity.same-path", "tps.unstable")))
    assert not both["meets"] and not both["noise_only"]
    assert "the machine's noise" in markdown_table([noisy])


def test_a_replaying_cheat_with_nothing_to_replay_is_judged_as_honest() -> None:
    stats = {"computed_tokens": 1600, "replayed_tokens": 0}
    row = Row("ReplayShaped", "cheat", engine="doubles.replay:ReplayShaped", replays=True)
    s = summarise(row, _report("VERIFIED", 23.4), model_ppl=23.404752, cap=CAP, stats=stats)
    assert s["meets"] and "1600 tokens computed, 0 replayed" in markdown_table([s])
    replayed = {"computed_tokens": 100, "replayed_tokens": 1500}
    s = summarise(row, _report("VERIFIED", 23.4), model_ppl=23.404752, cap=CAP, stats=replayed)
    assert not s["meets"]


def test_the_table_carries_the_numbers_and_todays_positions() -> None:
    s = summarise(_row(), _report("VERIFIED", 23.5), model_ppl=23.404752, cap=CAP, wall_s=30.0)
    table = markdown_table([s])
    assert "| int8 | `honest:Honest` | `QUANTIZATION=int8` | 23.500 | 1.0041 | 0.0300 |" in table
    mean_ok, answer_ok, _ = allowed_now()
    positions = f"| {0.03 / mean_ok:.2f} | {0.2 / answer_ok:.2f} | VERIFIED | – | yes |"
    assert positions in table


def test_the_rows_text_names_the_commits_and_every_miss() -> None:
    """What ``python -m calibration.calibrate --table`` renders (through ``bench.docs``):
    the commits measured, the table of the rows (the margin rows apart) and the misses."""
    s = summarise(_row(), _report("VERIFIED", 23.5), model_ppl=23.404752, cap=CAP, wall_s=30.0)
    missed = {**s, "name": "W=8", "meets": False, "expected": "REJECTED (ppl.cap)"}
    margin = {**s, "name": "spender 16/12", "decode_ratio": 1.0651, "git_sha": "def5678"}
    result = {
        "machine": {"git_sha": "abc1234", "cpu": "cpu", "cores": 2, "date": "d"},
        "model_ppl": 23.404752,
        "cap": CAP,
        "rows": [{**s, "git_sha": "abc1234"}, missed, margin],
    }
    text = rows_text(result)
    assert "`abc1234`" in text and "`def5678`" in text
    assert markdown_table([{**s, "git_sha": "abc1234"}, missed]) in text
    assert "| spender 16/12 |" not in text
    assert "Rows that do not meet their expectation: W=8." in text
