"""Hardware, GPU cleanliness, pinned weights and pinned data: each rule fires and stays quiet."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from podium.errors import SchemaError
from schemas.challenge import PinnedFile, load_challenge
from schemas.manifest import Manifest
from verifier.checks.hardware import clean_gpu_findings, hardware_findings
from verifier.checks.intake import rule_findings
from verifier.datasets import load_set
from verifier.fingerprint import Fingerprint
from verifier.weights import WeightsError, pinned_drafter, pinned_model

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "tests" / "schemas" / "examples"


def fingerprint(*names: str, pids: tuple[int, ...] = ()) -> Fingerprint:
    return Fingerprint({"gpus": [{"name": n} for n in names], "cpu": {}}, list(pids))


@pytest.mark.quiet("env.hardware")
@pytest.mark.fires("env.hardware")
@pytest.mark.parametrize(
    ("gpus", "official"),
    [
        (("NVIDIA A10G",), True),
        (("NVIDIA A10",), False),
        (("NVIDIA A100-SXM4-80GB",), False),
        ((), False),
    ],
)
def test_only_the_exact_gpu_name_is_official(gpus: tuple[str, ...], official: bool) -> None:
    ok, findings = hardware_findings(load_challenge("fast-gemma").hardware, fingerprint(*gpus))
    assert ok is official
    assert [f.check_id for f in findings] == ([] if official else ["env.hardware"])


def test_a_cpu_challenge_is_official_anywhere() -> None:
    assert hardware_findings(load_challenge("tiny").hardware, fingerprint()) == (True, [])


@pytest.mark.quiet("env.gpu-busy")
@pytest.mark.fires("env.gpu-busy")
def test_another_process_on_the_gpu_makes_the_machine_unclean() -> None:
    assert clean_gpu_findings(fingerprint("NVIDIA A10G")) == []
    busy = clean_gpu_findings(fingerprint("NVIDIA A10G", pids=(4242,)))
    assert [f.check_id for f in busy] == ["env.gpu-busy"] and "4242" in busy[0].message
    assert clean_gpu_findings(fingerprint("NVIDIA A10G", pids=(4242,)), own_pids={4242}) == []


def _manifest(**engine: object) -> Manifest:
    doc = json.loads((EXAMPLES / "manifest.valid.json").read_text())
    spec = load_challenge("tiny")
    doc["model"] = {"repo_id": spec.model.repo_id, "revision": spec.model.revision}
    doc["engine"].update(engine)
    return Manifest.parse(doc)


@pytest.mark.fires("engine.kind-not-allowed", "bundle.challenge-version")
def test_engine_kind_and_challenge_version_rules() -> None:
    spec = load_challenge("tiny")
    assert rule_findings(_manifest(), spec) == []
    baseline_only = dataclasses.replace(
        spec, engine=dataclasses.replace(spec.engine, kinds=["baseline"])
    )
    ids = [f.check_id for f in rule_findings(_manifest(kind="vllm"), baseline_only)]
    assert ids == ["engine.kind-not-allowed"]
    older = dataclasses.replace(spec, version="2025.9")
    version = rule_findings(_manifest(), older)
    assert [(f.check_id, f.severity) for f in version] == [("bundle.challenge-version", "warning")]


def test_pinned_weights_are_checked_and_a_mismatch_refused() -> None:
    spec = load_challenge("tiny")
    assert pinned_model(spec).checked_files == len(spec.model.files or [])
    wrong = [
        dataclasses.replace(f, sha256="0" * 64) if f.path == "config.json" else f
        for f in spec.model.files or []
    ]
    bad = dataclasses.replace(spec, model=dataclasses.replace(spec.model, files=wrong))
    with pytest.raises(WeightsError, match=r"config\.json"):
        pinned_model(bad)
    missing = [*(spec.model.files or []), PinnedFile("extra.bin", "0" * 64, 1)]
    with pytest.raises(WeightsError, match="missing"):
        pinned_model(
            dataclasses.replace(spec, model=dataclasses.replace(spec.model, files=missing))
        )


def test_the_pinned_drafter_is_checked_like_the_model_and_a_mismatch_refused() -> None:
    spec = load_challenge("tiny")
    drafter = spec.model.drafter
    assert drafter is not None and drafter.files
    checked = pinned_drafter(spec)
    assert checked is not None and checked.checked_files == len(drafter.files)
    assert checked.path.name == "drafter" and (checked.path / "config.json").is_file()
    wrong = [
        dataclasses.replace(f, sha256="0" * 64) if f.path == "model.safetensors" else f
        for f in drafter.files
    ]
    bad = dataclasses.replace(
        spec,
        model=dataclasses.replace(spec.model, drafter=dataclasses.replace(drafter, files=wrong)),
    )
    with pytest.raises(WeightsError, match=r"drafter file model\.safetensors"):
        pinned_drafter(bad)
    none = dataclasses.replace(spec, model=dataclasses.replace(spec.model, drafter=None))
    assert pinned_drafter(none) is None
    assert load_challenge("fast-gemma").model.drafter is None


def test_a_data_set_must_match_its_pinned_digest(tmp_path: Path) -> None:
    spec = load_challenge("tiny")
    pinned = spec.datasets.ppl_heldout
    assert pinned is not None and pinned.sha256
    assert load_set(pinned.uri, "ppl", sha256=pinned.sha256).sha256 == pinned.sha256
    copy = tmp_path / "ppl.jsonl"
    shutil.copy(REPO / "podium" / "data" / "tiny" / "ppl-heldout.jsonl", copy)
    with copy.open("a") as fh:
        fh.write('{"id": "extra", "context_token_ids": [2], "target_token_ids": [5]}\n')
    with pytest.raises(SchemaError, match="pins"):
        load_set(str(copy), "ppl", sha256=pinned.sha256)


def test_the_speed_up_is_against_the_baseline_of_the_hardware_the_run_had() -> None:
    from verifier.report import RunRecord
    from verifier.stages.evaluation import baseline_tps

    fast, tiny = load_challenge("fast-gemma"), load_challenge("tiny")

    def run(spec: Any, *gpus: str) -> float | None:
        rec = RunRecord(spec=spec, mode="official", runner="local-docker", started="x")
        rec.fingerprint = fingerprint(*gpus)
        rec.official_hardware, _ = hardware_findings(spec.hardware, rec.fingerprint)
        return baseline_tps(spec, rec)

    assert run(fast, "NVIDIA A10G") == 44.0
    assert run(fast, "NVIDIA H200") is None  # no baseline measured there: no speed-up claimed
    assert run(tiny) == tiny.tps.baseline_tps
