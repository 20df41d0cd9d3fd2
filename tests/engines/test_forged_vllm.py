"""A log line buys no lever: a ``kind = "vllm"`` entry that runs podium's baseline engine.

The cheat (``doubles.bought:ForgedVllm``) declares ``KV_CACHE_DTYPE = "fp8"``, prints the
``non-default args:`` line vLLM would print for its frozen knobs (so
``engine.runtime-mismatch`` finds nothing; ``/version`` and ``/metrics`` answer 404), and
spends the KV cache's widening of ``integrity.same-path`` on a lossy decode
(``BUY_LOSSY_NATS``). It was VERIFIED at 1.39x the honest TPS while the verifier took
the log line for evidence. Now the evidence for a lever is only the verifier's own
(``verifier.checks.vllm_image``), so, through the whole pipeline on the ``tiny``
challenge with the verifier's reference:

- built on podium's engine base and starting the baseline, it is REJECTED at intake
  (``engine.not-vllm``), before anything runs;
- disguised as vLLM (the pinned base, a launcher of podium's name that starts the
  baseline), nothing the verifier sees says it is not vLLM, but its launcher is not
  podium's, so the lever is not confirmed and it is judged against the plain budget:
  REJECTED by ``integrity.same-path``, the forged line in its log notwithstanding.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from doubles import carry, engine_class
from doubles.sandbox import DisguisedVllmSandbox, VerifyingSandbox

from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.harness.engine_runtime import expected_args
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.reference_engine import reference_runner

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
BASE_ID = "sha256:" + "a" * 64
KV = '[engine.config]\nKV_CACHE_DTYPE = "fp8"\n'
#: a draft kept wherever it is within this many nats of the top: inside the decode's
#: budget, outside the plain self-gap an engine's decode may differ from its scoring by
LOSSY = "0.3"
FORGED_LAUNCHER = (
    "import runpy\n"
    "import sys\n\n"
    "sys.argv = [sys.argv[0], '--config', sys.argv[1]]\n"
    "runpy.run_module('engines.baseline', run_name='__main__')\n"
)


def _source(root: Path, example: str, edits: tuple[tuple[str, str], ...]) -> Path:
    src = root / "src"
    shutil.copytree(
        REPO / "examples" / example,
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    toml = (src / "podium.toml").read_text(encoding="utf-8")
    for old, new in edits:
        assert old in toml, old
        toml = toml.replace(old, new, 1)
    (src / "podium.toml").write_text(toml, encoding="utf-8")
    carry(src / "engine")
    return src


def _verify(src: Path, runner: Any, out: Path) -> dict[str, Any]:
    packaged = package(src, src.parent / "dist", build=False, base_digest=BASE_ID)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    outcome = verify(
        VerifyRequest(
            packaged.bundle.path, load_challenge("tiny"), runner, out, reference=reference_runner
        )
    )
    assert outcome.evidence is not None
    return outcome.evidence


def _env(config: dict[str, Any]) -> dict[str, str]:
    forged = repr({"model": "/model", **expected_args(config)})
    return {
        "ENGINE_CLASS": engine_class("ForgedVllm"),
        "OMP_NUM_THREADS": "1",
        "FORGE_VLLM_ARGS": forged,
        "BUY_LOSSY_NATS": LOSSY,
    }


def _errors(report: dict[str, Any]) -> set[str]:
    return {f["check_id"] for f in report["findings"] if f["severity"] == "error"}


def _check(report: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["id"] == check_id)


@pytest.mark.fires("engine.not-vllm")
def test_a_vllm_entry_on_the_baseline_engine_is_rejected_before_it_runs(tmp_path: Path) -> None:
    src = _source(
        tmp_path,
        "tiny-baseline",
        (('kind = "baseline"', 'kind = "vllm"'), ("[engine.config]\n", KV)),
    )
    runner = VerifyingSandbox(env=_env({"KV_CACHE_DTYPE": "fp8"}))
    report = _verify(src, runner, tmp_path / "out")
    assert report["verdict"] == "REJECTED"
    assert "engine.not-vllm" in _errors(report)
    assert not runner.started  # judged from the bundle alone


def test_a_vllm_entry_disguised_as_podiums_launcher_is_judged_against_the_plain_budget(
    tmp_path: Path,
) -> None:
    src = _source(tmp_path, "tiny-vllm", (("[engine.config]\n", KV),))
    launcher = src / "engine" / "engines" / "vllm_launcher"
    shutil.copytree(REPO / "engines" / "vllm_launcher", launcher)
    (launcher / "__main__.py").write_text(FORGED_LAUNCHER, encoding="utf-8")
    config = {"DTYPE": "float32", "ENFORCE_EAGER": True, "KV_CACHE_DTYPE": "fp8"}
    report = _verify(src, DisguisedVllmSandbox(env=_env(config)), tmp_path / "out")
    log = (tmp_path / "out" / "engine.log").read_text(encoding="utf-8", errors="replace")
    assert "non-default args: {'model': '/model'" in log  # the forged line was there
    assert "engine.not-vllm" not in _errors(report)  # nothing seen says it is not vLLM
    assert "engine.runtime-mismatch" not in _errors(report)  # its own account matched
    same = _check(report, "integrity.same-path")
    details = same["details"]
    assert details["kv_cache_in_effect"] is False
    assert details["max_mean_self_gap"] == pytest.approx(0.005)  # the plain budget
    assert details["required_fraction"] == pytest.approx(0.95)
    assert same["status"] == "fail", same["summary"]
    assert report["verdict"] == "REJECTED", report["findings"]
    decode = _check(report, "integrity.reference-decode")["details"]["reference_model"]
    assert "not podium's launcher alone" in decode["unconfirmed"]["KV_CACHE_DTYPE"]
