"""End to end: a real bundle, rebuilt without cache, run in the Docker sandbox, judged.

The honest baseline ends VERIFIED on the tiny challenge (whose hardware is a CPU); the
same bundle under the fast-gemma hardware rule on a machine without an A10G ends
UNOFFICIAL; each adversarial engine (``tests/doubles``), cheats that know how
they are judged included, ends with its expected verdict and finding ids, judged by the
verifier's own reference model after the engine has stopped.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from doubles import carry, engine_class
from verdicts import TIMING_CHECKS, assert_honest

from podium.signing import KeyPair
from schemas.challenge import load_challenge
from submission.bundle import package
from verifier.pipeline import VerifyRequest, verify
from verifier.report import full_document
from verifier.runners.local_docker import LocalDockerRunner
from verifier.runners.reference_engine import reference_runner

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "tiny-baseline"


def make_bundle(tmp: Path, name: str, env: dict[str, str] | None = None) -> Path:
    """The sample submission, optionally turned into an adversarial engine by its env."""
    src = tmp / f"src-{name}"
    shutil.copytree(
        EXAMPLE, src, ignore=shutil.ignore_patterns("manifest.json", "engine-config.json")
    )
    toml = (src / "podium.toml").read_text()
    toml = toml.replace('entry = "tiny-baseline"', f'entry = "{name}"')
    if env:
        carry(src / "engine")
        lines = "".join(f'{k} = "{v}"\n' for k, v in env.items())
        toml = toml.replace("[engine.env]\n", "[engine.env]\n" + lines)
    (src / "podium.toml").write_text(toml)
    packaged = package(src, tmp / "dist", build=False)
    assert packaged.bundle is not None, [f.one_line() for f in packaged.findings]
    return packaged.bundle.path


def run_verify(
    bundle: Path,
    out: Path,
    *,
    spec_name: str = "tiny",
    key: KeyPair | None = None,
    reported_tps: float | None = None,
) -> dict[str, Any]:
    spec = load_challenge(spec_name)
    req = VerifyRequest(
        bundle=bundle,
        spec=spec,
        runner=LocalDockerRunner(),
        out_dir=out,
        key=key,
        reported_tps=reported_tps,
        reference=reference_runner,
    )
    return verify(req).report


def finding_ids(report: dict[str, Any]) -> set[str]:
    return {f["check_id"] for f in report["findings"]}


@pytest.fixture(scope="module")
def key() -> KeyPair:
    return KeyPair.generate()


@pytest.fixture(scope="module")
def honest(tmp_path_factory: pytest.TempPathFactory, key: KeyPair) -> tuple[dict[str, Any], Path]:
    tmp = tmp_path_factory.mktemp("honest")
    bundle = make_bundle(tmp, "honest")
    report = run_verify(bundle, tmp / "out", key=key)
    return report, tmp / "out" / "report.json"


def test_honest_baseline_is_verified_with_every_check_green(
    honest: tuple[dict[str, Any], Path],
) -> None:
    report, _ = honest
    assert_honest(report)  # a loaded machine may leave a timing check unjudged (FAILED)
    statuses = {c["id"]: c["status"] for c in report["checks"]}
    for check in (
        "ppl.cap",
        "tps.unstable",
        "tps.prompt-mismatch",
        "integrity.reference-decode",
        "ppl.reference-mismatch",
        "integrity.same-path",
        "integrity.lengths",
        "integrity.caching",
        "integrity.isolation",
    ):
        unjudged = check in TIMING_CHECKS and statuses.get(check) == "error"
        assert statuses.get(check) == "pass" or unjudged, (check, statuses)
    assert set(report["seeds"]) == {"plan", "sample"}
    ppl = report["metrics"]["ppl"]
    assert ppl["value"] <= ppl["cap"]
    assert report["metrics"]["tps"]["median"] > 0
    assert report["image"]["id"].startswith("sha256:")
    # the organizer's evidence behind it has every check's details and every stage's time
    full = full_document(honest[1])
    assert full["report_id"] == report["report_id"]
    decode = next(c for c in full["checks"] if c["id"] == "integrity.reference-decode")
    assert decode["details"]["sample_seed"] == report["seeds"]["sample"]
    # every second of the run is in a named stage: they add up to its wall time
    started, finished = (datetime.fromisoformat(full[k]) for k in ("started", "finished"))
    stages = {s["name"]: s["seconds"] for s in full["stages"]}
    assert abs(sum(stages.values()) - (finished - started).total_seconds()) <= 1.0, stages
    assert {"isolation", "stop", "cleanup", "reference", "reference-engine"} <= set(stages)


def test_tampered_report_fails_signature_check(
    honest: tuple[dict[str, Any], Path], key: KeyPair, tmp_path: Path
) -> None:
    _, path = honest
    pub = tmp_path / "k.pub"
    pub.write_bytes(key.public_pem())
    cli = [sys.executable, "-m", "podium.cli.app", "report", "verify"]
    ok = subprocess.run([*cli, str(path), "--pubkey", str(pub)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    doc = json.loads(path.read_text())
    doc["metrics"]["tps"]["median"] *= 1.5  # a schema-valid number: only the signature can tell
    bad = tmp_path / "tampered.json"
    bad.write_text(json.dumps(doc))
    out = subprocess.run([*cli, str(bad), "--pubkey", str(pub)], capture_output=True, text=True)
    assert out.returncode == 1


def test_off_spec_hardware_is_unofficial_never_verified(tmp_path: Path) -> None:
    """The fast-gemma hardware rule (exactly one NVIDIA A10G) on a machine without one."""
    tiny = json.loads((REPO / "podium" / "data" / "challenges" / "tiny.json").read_text())
    fast = json.loads((REPO / "podium" / "data" / "challenges" / "fast-gemma.json").read_text())
    tiny["hardware"] = fast["hardware"]
    spec_file = tmp_path / "tiny-on-a10g.json"
    spec_file.write_text(json.dumps(tiny))
    bundle = make_bundle(tmp_path, "offspec")
    report = run_verify(bundle, tmp_path / "out", spec_name=str(spec_file))
    assert report["verdict"] == "UNOFFICIAL"
    assert "env.hardware" in finding_ids(report)
    assert report["environment"]["official_hardware"] is False


ADVERSARIES: list[tuple[str, dict[str, str], str, tuple[str, ...]]] = [
    ("InflatedUsage", {}, "REJECTED", ("tps.usage-mismatch",)),
    ("PositiveLogprobs", {}, "REJECTED", ("ppl.logprob-positive",)),
    ("SwitchPath", {}, "REJECTED", ("integrity.reference-decode", "integrity.same-path")),
    ("EarlyStop", {}, "REJECTED", ("integrity.lengths",)),
    ("Degraded", {}, "REJECTED", ("ppl.cap",)),
    ("ScaledLogprobs", {}, "REJECTED", ("ppl.reference-mismatch",)),
    ("ForgedChat", {}, "REJECTED", ("integrity.reference-decode", "integrity.same-path")),
    (
        "ForgedPromptReplay",
        {},
        "REJECTED",
        ("tps.prompt-mismatch", "integrity.reference-decode"),
    ),
    (
        "ForgedPromptReplay",
        {"ADVERSARY_HONEST_IDS": "1"},
        "REJECTED",
        ("integrity.reference-decode",),
    ),
    ("GarbageTail", {}, "REJECTED", ("integrity.reference-decode",)),
    ("HonestUntilScored", {}, "REJECTED", ("integrity.reference-decode",)),
    ("SometimesCheap", {}, "REJECTED", ("integrity.reference-decode",)),
    ("Crash", {"ADVERSARY_AFTER": "4"}, "FAILED", ()),
    ("Hang", {"ADVERSARY_AFTER": "4"}, "FAILED", ()),
]


@pytest.mark.parametrize(
    ("name", "env", "verdict", "expected"),
    ADVERSARIES,
    ids=[a[0] + ("-honest-ids" if a[1].get("ADVERSARY_HONEST_IDS") else "") for a in ADVERSARIES],
)
def test_adversarial_engine_gets_expected_verdict(
    tmp_path: Path, name: str, env: dict[str, str], verdict: str, expected: tuple[str, ...]
) -> None:
    bundle = make_bundle(tmp_path, name.lower(), {"ENGINE_CLASS": engine_class(name), **env})
    report = run_verify(bundle, tmp_path / "out")
    assert report["verdict"] == verdict, (report["findings"], report["failure"])
    found = finding_ids(report)
    assert set(expected) <= found, report["findings"]
    if not expected:
        assert report["failure"]["stage"] in ("evaluation", "ready")
        assert report["organizer_log"] == "engine.log"  # the engine's words: organizer's only
        assert "adversary: " in (tmp_path / "out" / "engine.log").read_text()


def test_escaping_engine_is_contained_and_verdict_unaffected(tmp_path: Path) -> None:
    heldout_dir = REPO / "podium" / "data" / "tiny"  # where the verifier's held-out files are
    bundle = make_bundle(
        tmp_path,
        "escape",
        {"ENGINE_CLASS": engine_class("Escape"), "ADVERSARY_PATHS": str(heldout_dir)},
    )
    report = run_verify(bundle, tmp_path / "out")
    log = (tmp_path / "out" / "engine.log").read_text()
    line = next(x for x in log.splitlines() if x.startswith("PODIUM-ATTEMPTS "))
    attempts = json.loads(line.removeprefix("PODIUM-ATTEMPTS "))
    assert attempts["connect"] and all(v != "connected" for v in attempts["connect"].values())
    assert attempts["dns"] != "resolved"
    assert attempts["jsonl_found"] == []
    assert attempts["files"][str(heldout_dir)] is False
    assert_honest(report)
