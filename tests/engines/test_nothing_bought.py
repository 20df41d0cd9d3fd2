"""Nothing can be bought: an engine gets the same verdict with and without what it bought.

Each pair runs one engine of ``doubles.bought`` twice through the whole pipeline on the
``tiny`` challenge (the real spec, the verifier's reference engine; the engine as a
process under a runner posing as a sandbox, as ``test_cheats.py`` runs its cheats): once
plain, once with a purchase that costs it nothing (a scoring reported lower than its
model computes, a lever declared but not used, its own tops withheld). A verdict that
moved would be an allowance bought. Decodes whose own model is over the cap are REJECTED
whatever the engine reports; a decode inside the budget (a window of 16) is VERIFIED,
which the ``budget`` rule permits (``docs/measurement.md``).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from doubles import carry, engine_class
from doubles.sandbox import VerifyingSandbox
from verdicts import TIMING_CHECKS

from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.pipeline import VerifyRequest, verify
from verifier.runners.reference_engine import reference_runner

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
ENGINE = engine_class("BuysAllowance")
#: a scoring reported 4.7 % worse than the model's: just under tiny's cap of 5 %
AT_THE_CAP = str(math.log(1.047))


def _bundle(root: Path, config: dict[str, str] | None = None) -> Path:
    src = root / "src"
    shutil.copytree(
        REPO / "examples" / "tiny-baseline",
        src,
        ignore=shutil.ignore_patterns("manifest.json", "engine-config.json"),
    )
    if config:
        toml = src / "podium.toml"
        lines = "".join(f'{k} = "{v}"\n' for k, v in config.items())
        text = toml.read_text(encoding="utf-8")
        toml.write_text(text.replace("[engine.config]\n", "[engine.config]\n" + lines, 1))
    carry(src / "engine")
    packaged = package(src, root / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    return packaged.bundle.path


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bundle(tmp_path_factory.mktemp("plain"))


@pytest.fixture(scope="module")
def kv_declared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same entry declaring an fp8 KV cache, which the baseline engine ignores."""
    return _bundle(tmp_path_factory.mktemp("kv"), {"KV_CACHE_DTYPE": "fp8"})


def _verify(bundle: Path, out: Path, **env: str) -> dict[str, Any]:
    """The organizer's evidence of one verification: the report's verdict and findings with
    every check's details at full precision."""
    runner = VerifyingSandbox(env={"ENGINE_CLASS": ENGINE, "OMP_NUM_THREADS": "1", **env})
    spec = load_challenge("tiny")
    outcome = verify(VerifyRequest(bundle, spec, runner, out, reference=reference_runner))
    assert outcome.evidence is not None
    assert outcome.evidence["verdict"] == outcome.report["verdict"]
    return outcome.evidence


@pytest.fixture(scope="module")
def lossy_alone(plain: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Lossy speculation with nothing bought: the yardstick of the first two pairs."""
    return _verify(plain, tmp_path_factory.mktemp("alone"), BUY_LOSSY_NATS="0.9")


def _errors(report: dict[str, Any]) -> set[str]:
    return {f["check_id"] for f in report["findings"] if f["severity"] == "error"}


def _check(report: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["id"] == check_id)


def test_lossy_speculation_is_rejected_with_and_without_a_lowered_scoring_and_hidden_tops(
    plain: Path, lossy_alone: dict[str, Any], tmp_path: Path
) -> None:
    """A draft kept wherever it is within 0.9 nats of the top: REJECTED by the reference
    decode alone; lowering every scoring log-probability and withholding every top changes
    no bound, and the withheld tops are a finding of their own."""
    alone = lossy_alone
    bought = _verify(
        plain, tmp_path / "bought", BUY_LOSSY_NATS="0.9", BUY_LOWER_NATS="0.0131", BUY_HIDE_TOPS="1"
    )
    assert alone["verdict"] == bought["verdict"] == "REJECTED", (
        alone["findings"],
        bought["findings"],
    )
    assert "integrity.reference-decode" in _errors(alone) & _errors(bought)
    assert "ppl.reference-mismatch" in _errors(bought)  # the withheld tops
    a, b = (_check(r, "integrity.reference-decode")["details"] for r in (alone, bought))
    assert a["allowance"] == b["allowance"]  # the lowered scoring bought no allowance
    assert b["reported_scoring_loss"] > a["reported_scoring_loss"] + 0.01


def test_a_declared_kv_cache_the_engine_ignores_buys_nothing(
    lossy_alone: dict[str, Any], kv_declared: Path, tmp_path: Path
) -> None:
    alone = lossy_alone
    declared = _verify(kv_declared, tmp_path / "declared", BUY_LOSSY_NATS="0.9")
    assert alone["verdict"] == declared["verdict"] == "REJECTED"
    same = _check(declared, "integrity.same-path")["details"]
    assert same["kv_cache_in_effect"] is False
    assert (
        same["max_mean_self_gap"]
        == _check(alone, "integrity.same-path")["details"]["max_mean_self_gap"]
    )


def test_a_decode_whose_own_model_is_over_the_cap_is_rejected_whatever_is_reported(
    plain: Path, tmp_path: Path
) -> None:
    """A window of 10 decodes (its own PPL is over the cap); the scoring is the full
    model's, honest or lowered to 4.7 % over it: REJECTED both ways."""
    honest_scoring = _verify(plain, tmp_path / "honest", BUY_DECODE_WINDOW="10")
    lowered = _verify(
        plain, tmp_path / "lowered", BUY_DECODE_WINDOW="10", BUY_LOWER_NATS=AT_THE_CAP
    )
    for report in (honest_scoring, lowered):
        assert report["verdict"] == "REJECTED", report["findings"]
        assert "integrity.reference-decode" in _errors(report)
    assert lowered["metrics"]["ppl"]["value"] > 24.4  # it did report a PPL near the cap


def test_a_decode_inside_the_budget_gets_one_verdict_whatever_is_reported(
    plain: Path, tmp_path: Path
) -> None:
    """A window of 16 in decode only (its own PPL 1.037 x the model's): the reference decode
    permits it (the budget rule), beside an honest scoring and a lowered one alike; its
    probes are answered by its scoring model, so ``integrity.same-path`` sees a decode off
    its own scoring both times (a router that answers them with its decode model passes
    that filter: ``doubles.decode:RoutedDecodeWindow``). One verdict, one set of ids."""
    honest_scoring = _verify(plain, tmp_path / "honest", BUY_DECODE_WINDOW="16")
    lowered = _verify(plain, tmp_path / "lowered", BUY_DECODE_WINDOW="16", BUY_LOWER_NATS="0.02")
    for report in (honest_scoring, lowered):
        assert _check(report, "integrity.reference-decode")["status"] == "pass"
    assert honest_scoring["verdict"] == lowered["verdict"]
    assert _errors(honest_scoring) - TIMING_CHECKS == _errors(lowered) - TIMING_CHECKS
