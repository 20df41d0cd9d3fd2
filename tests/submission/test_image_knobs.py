"""One source of truth for a config: a knob the Dockerfile sets must be the frozen config's.

Golden cases at ``podium submission validate`` (the participant's directory) and at
intake (a bundle whose Dockerfile was changed after packaging, its manifest's digests
made to match, as a hand-built bundle would be): each finding names the Dockerfile's line
and the config's key.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from schemas.challenge import load_challenge
from schemas.findings import Finding
from submission.bundle import package
from submission.validate import validate_submission
from verifier.intake import intake

Make = Callable[..., Path]
FAKE_DIGEST = "sha256:" + "ab" * 32
IMAGE_KNOB = "engine.image-knob"


def _set_knob(directory: Path, line: str) -> None:
    path = directory / "podium.toml"
    text = path.read_text()
    path.write_text(text.replace("[engine.config]\n", f"[engine.config]\n{line}\n", 1))


def _dockerfile(directory: Path, old: str, new: str) -> int:
    """Replace ``old`` with ``new`` in the Dockerfile; the line ``new`` starts on."""
    path = directory / "Dockerfile"
    text = path.read_text()
    assert old in text
    text = text.replace(old, new, 1)
    path.write_text(text)
    return text[: text.index(new)].count("\n") + 1


def _toml_line(directory: Path, key: str) -> int:
    lines = (directory / "podium.toml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(f"{key} ="))


def _image_findings(directory: Path) -> list[Finding]:
    return [f for f in validate_submission(directory).findings if f.check_id == IMAGE_KNOB]


@pytest.mark.fires("engine.image-knob")
def test_an_env_that_contradicts_the_config_names_both_places(make_submission: Make) -> None:
    directory = make_submission()
    _set_knob(directory, "SLIDING_WINDOW = 32")
    line = _dockerfile(directory, "EXPOSE 8000\n", "ENV SLIDING_WINDOW=16\nEXPOSE 8000\n")
    (finding,) = _image_findings(directory)
    knob = _toml_line(directory, "SLIDING_WINDOW")
    assert f"Dockerfile:{line} ENV SLIDING_WINDOW=16" in finding.message
    assert f"podium.toml:{knob} engine.config.SLIDING_WINDOW = 32" in finding.message
    assert finding.where == f"Dockerfile:{line} ENV" and finding.is_error


@pytest.mark.fires("engine.image-knob")
def test_a_cmd_argument_that_contradicts_the_config_is_found_in_a_continued_line(
    make_submission: Make,
) -> None:
    directory = make_submission()
    _set_knob(directory, "SLIDING_WINDOW = 32")
    cmd = (directory / "Dockerfile").read_text().split("CMD ", 1)[1].splitlines()[0]
    words = json.loads(cmd)
    new = 'CMD ["' + '", \\\n     "'.join([*words, "--sliding-window", "16"]) + '"]'
    line = _dockerfile(directory, "CMD " + cmd, new)
    (finding,) = _image_findings(directory)
    assert f"Dockerfile:{line} CMD SLIDING_WINDOW=16" in finding.message
    assert "engine.config.SLIDING_WINDOW = 32" in finding.message


@pytest.mark.fires("engine.image-knob")
def test_a_knob_only_the_dockerfile_sets_is_refused(make_submission: Make) -> None:
    directory = make_submission()
    line = _dockerfile(
        directory, "EXPOSE 8000\n", "ENV OTHER=1 \\\n    QUANTIZATION='int8'\nEXPOSE 8000\n"
    )
    (finding,) = _image_findings(directory)
    assert f"Dockerfile:{line} ENV QUANTIZATION=int8" in finding.message
    assert "does not (podium.toml [engine.config] QUANTIZATION)" in finding.message


@pytest.mark.fires("engine.image-knob")
def test_a_forbidden_knob_in_the_dockerfile_breaks_the_rule_and_the_config(
    make_submission: Make,
) -> None:
    directory = make_submission()
    _set_knob(directory, "PRECACHE_BENCH = 0")
    line = _dockerfile(directory, "EXPOSE 8000\n", 'ENV PRECACHE_BENCH="1"\nEXPOSE 8000\n')
    findings = validate_submission(directory).findings
    ids = {f.check_id for f in findings if f.is_error}
    assert {IMAGE_KNOB, "engine.precache"} <= ids, findings
    (rule,) = [f for f in findings if f.check_id == "engine.precache"]
    assert rule.where and rule.where.startswith(f"Dockerfile:{line}")


@pytest.mark.quiet("engine.image-knob")
def test_the_scaffold_and_an_env_that_agrees_with_the_config_are_quiet(
    make_submission: Make,
) -> None:
    directory = make_submission()
    assert _image_findings(directory) == []
    _set_knob(directory, "SLIDING_WINDOW = 32")
    _dockerfile(directory, "EXPOSE 8000\n", 'ENV SLIDING_WINDOW="32"\nEXPOSE 8000\n')
    assert _image_findings(directory) == []
    vllm = make_submission(kind="vllm", name="vllm")
    assert _image_findings(vllm) == []


def _rewritten(bundle: Path, name: str, text: str, out: Path) -> Path:
    """``bundle`` with ``name`` replaced by ``text`` and its manifest entry made to match."""
    with tarfile.open(bundle) as src:
        members = [(m, src.extractfile(m).read() if m.isfile() else b"") for m in src]  # type: ignore[union-attr]
    data = text.encode()
    done = []
    for member, body in members:
        if member.name.endswith("/" + name) or member.name == name:
            body = data
        done.append((member, body))
    for i, (member, body) in enumerate(done):
        if member.name.endswith("manifest.json"):
            manifest = json.loads(body)
            for entry in manifest["files"]:
                if entry["path"] == name:
                    entry["sha256"] = hashlib.sha256(data).hexdigest()
                    entry["size"] = len(data)
            done[i] = (member, json.dumps(manifest, indent=2).encode())
    with tarfile.open(out, "w:gz") as dst:
        for member, body in done:
            member.size = len(body)
            dst.addfile(member, io.BytesIO(body) if member.isfile() else None)
    return out


@pytest.mark.fires("engine.image-knob")
def test_intake_refuses_a_bundle_whose_dockerfile_contradicts_its_frozen_config(
    make_submission: Make, tmp_path: Path
) -> None:
    directory = make_submission()
    _set_knob(directory, "SLIDING_WINDOW = 32")
    made = package(directory, tmp_path / "dist", base_digest=FAKE_DIGEST, build=False)
    assert made.bundle is not None
    spec = load_challenge("tiny")
    # the base (a digest by hand, unchecked) is judged in test_fast_gemma_base; here the
    # Dockerfile is, as for a runner that builds no image
    clean = intake(made.bundle.path, tmp_path / "clean", spec, rebuilds=False)
    assert clean.ok and not [f for f in clean.findings if f.check_id == IMAGE_KNOB]
    text = (directory / "Dockerfile").read_text()
    text = text.replace("EXPOSE 8000\n", "ENV SLIDING_WINDOW 16\nEXPOSE 8000\n")
    line = text[: text.index("ENV SLIDING_WINDOW 16")].count("\n") + 1
    bad = _rewritten(made.bundle.path, "Dockerfile", text, tmp_path / "bad.tar.gz")
    taken = intake(bad, tmp_path / "bad", spec, rebuilds=False)
    (finding,) = [f for f in taken.findings if f.check_id == IMAGE_KNOB]
    assert not taken.ok
    assert f"Dockerfile:{line} ENV SLIDING_WINDOW=16" in finding.message
    assert "manifest.json:engine.config.SLIDING_WINDOW = 32" in finding.message
