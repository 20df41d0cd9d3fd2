"""validate lists every problem at once, each with its stable id."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from podium.cli.app import main
from schemas.challenge import ChallengeSpec, load_challenge
from submission.validate import validate_submission


@pytest.mark.quiet(
    "engine.knob-ignored",
    "submission.generated-file",
    "submission.missing-config",
    "submission.config-parse",
    "submission.config-schema",
    "submission.unknown-challenge",
    "submission.name",
    "submission.model-pin",
    "submission.served-model-name",
    "submission.missing-dockerfile",
    "submission.dockerfile-base",
    "submission.requirements",
    "submission.symlink-outside",
    "submission.symlink-dir",
    "submission.special-file",
    "submission.too-many-files",
    "submission.too-large",
    "submission.origin-missing",
    "submission.config-edited",
    "config.knob-name",
    "config.unknown-knob",
    "config.no-such-knob",
)
@pytest.mark.parametrize(
    ("kind", "challenge"),
    [
        ("baseline", "tiny"),
        ("custom", "tiny"),
        ("vllm", "tiny"),
        ("vllm", "fast-gemma"),
    ],
)
def test_init_then_validate_has_no_findings(
    kind: str, challenge: str, make_submission: Callable[..., Path]
) -> None:
    result = validate_submission(make_submission(kind, challenge))
    assert result.findings == []
    assert result.ok


def test_a_vllm_entry_for_a_cpu_challenge_starts_from_vllms_cpu_build(
    make_submission: Callable[..., Path],
) -> None:
    text = (make_submission("vllm", "tiny") / "podium.toml").read_text()
    assert 'base_image = "podium/vllm-cpu:0.32.0"' in text
    # the image's build decides the device: vllm ignores DEVICE, so init writes none
    assert "DEVICE" not in text and 'DTYPE = "float32"' in text
    assert "OMP_NUM_THREADS = 1" in text
    gpu = (make_submission("vllm", "fast-gemma", name="gpu") / "podium.toml").read_text()
    assert 'base_image = "vllm/vllm-openai:v0.32.0"' in gpu


def _set_config(directory: Path, lines: str) -> None:
    text = (directory / "podium.toml").read_text()
    (directory / "podium.toml").write_text(
        text.replace("[engine.config]\n", "[engine.config]\n" + lines + "\n", 1)
    )


FORBIDDEN = {
    "engine.model": 'MODEL = "google/gemma-2-2b-it"',
    "engine.precache": "PRECACHE_BENCH = 1",
    "engine.synthetic-acceptance": (
        'SPECULATIVE_CONFIG = { method = "mtp", rejection_sample_method = "synthetic" }'
    ),
    "engine.logprobs-mode": 'LOGPROBS_MODE = "raw_logits"',
    "engine.multimodal-off": "LIMIT_MM_PER_PROMPT = { image = 0 }",
    "engine.language-model-only": "LANGUAGE_MODEL_ONLY = true",
}


@pytest.mark.parametrize("rule_id", sorted(FORBIDDEN))
def test_each_forbidden_rule_is_found(rule_id: str, make_submission: Callable[..., Path]) -> None:
    directory = make_submission("vllm", "fast-gemma")
    _set_config(directory, FORBIDDEN[rule_id])
    assert [f.check_id for f in validate_submission(directory).findings] == [rule_id]


def test_every_forbidden_rule_of_the_challenge_is_covered() -> None:
    assert {r.id for r in load_challenge("fast-gemma").engine.forbidden} == set(FORBIDDEN)


@pytest.mark.fires(
    "config.schema",
    "submission.dockerfile-base",
    "submission.model-pin",
    "submission.name",
    "submission.special-file",
    "submission.symlink-dir",
    "submission.symlink-outside",
    "submission.too-many-files",
)
def test_all_problems_are_listed_at_once(
    make_submission: Callable[..., Path], small_limits: ChallengeSpec
) -> None:
    directory = make_submission("baseline", "tiny")
    _set_config(directory, 'PRECACHE_BENCH = 1\nSLIDING_WINDOW = "wide"')
    text = (directory / "podium.toml").read_text()
    text = text.replace('team = "acme"', 'team = "no spaces"').replace(
        'kind = "baseline"', 'kind = "vllm"'
    )
    (directory / "podium.toml").write_text(text + '\n[model]\nrevision = "' + "1" * 40 + '"\n')
    (directory / "Dockerfile").write_text("FROM podium/engine-base:bookworm\n")
    os.symlink("/etc/hostname", directory / "outside")
    os.symlink("engine", directory / "dirlink")
    os.mkfifo(directory / "pipe")
    for i in range(40):
        (directory / f"pad{i}.txt").write_text("x")
    no_vllm = small_limits.with_overrides(
        engine=dataclasses.replace(small_limits.engine, kinds=["baseline", "custom"])
    )
    findings = validate_submission(directory, challenge=no_vllm).findings
    ids = sorted(f.check_id for f in findings)
    assert ids == sorted(
        [
            "config.schema",
            "engine.kind-not-allowed",
            "engine.knob-ignored",  # the baseline's DEVICE, on what is now a vllm entry
            "engine.precache",
            "submission.dockerfile-base",
            "submission.model-pin",
            "submission.name",
            "submission.special-file",
            "submission.symlink-dir",
            "submission.symlink-outside",
            "submission.too-many-files",
        ]
    )
    assert all(f.message and f.where for f in findings if f.check_id != "submission.too-many-files")


@pytest.mark.fires("submission.missing-dockerfile", "submission.missing-config")
def test_missing_dockerfile_and_config(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    directory = make_submission()
    (directory / "Dockerfile").unlink()
    assert [f.check_id for f in validate_submission(directory).findings] == [
        "submission.missing-dockerfile"
    ]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert [f.check_id for f in validate_submission(empty).findings] == [
        "submission.missing-config"
    ]


@pytest.mark.fires("submission.config-schema")
def test_bad_toml_shape_is_a_schema_finding(make_submission: Callable[..., Path]) -> None:
    directory = make_submission()
    text = (directory / "podium.toml").read_text().replace("port = 8000", 'port = "eight"')
    text = text.replace("[engine.env]\n", "[engine.env]\nTHREADS = 4\n")
    (directory / "podium.toml").write_text(text)
    findings = validate_submission(directory).findings
    assert [f.check_id for f in findings] == ["submission.config-schema"] * 2
    lines = (directory / "podium.toml").read_text().splitlines()
    port_eight = 'port = "eight"'
    assert [f.where for f in findings] == [
        f"podium.toml:{lines.index('THREADS = 4') + 1} engine.env.THREADS",
        f"podium.toml:{lines.index(port_eight) + 1} engine.port",
    ]
    assert "write an integer from 1 to 65535" in (findings[1].hint or "")


@pytest.mark.fires("submission.too-large")
def test_unpacked_size_limit(
    make_submission: Callable[..., Path], small_limits: ChallengeSpec
) -> None:
    directory = make_submission()
    (directory / "weights.bin").write_bytes(bytes(2 * 1024 * 1024))
    ids = [f.check_id for f in validate_submission(directory, challenge=small_limits).findings]
    assert ids == ["submission.too-large"]


def test_cli_exit_codes_and_json(
    make_submission: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    directory = make_submission()
    with pytest.raises(SystemExit) as ok:
        main(["submission", "validate", str(directory), "--json"])
    assert ok.value.code == 0
    assert json.loads(capsys.readouterr().out)["valid"] is True
    _set_config(directory, "PRECACHE_BENCH = 1")
    with pytest.raises(SystemExit) as bad:
        main(["submission", "validate", str(directory), "--json"])
    assert bad.value.code == 1
    doc = json.loads(capsys.readouterr().out)
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    assert [f["check_id"] for f in errors] == ["engine.precache"]
    assert errors[0]["hint"] == "set PRECACHE_BENCH=0"


def test_init_refuses_a_non_empty_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(SystemExit) as refused:
        main(["submission", "init", str(tmp_path / "x")])
    assert refused.value.code == 2
    assert "not empty" in capsys.readouterr().err
    with pytest.raises(SystemExit) as forced:
        main(["submission", "init", str(tmp_path / "x"), "--force", "--json"])
    assert forced.value.code == 0
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"
    spec = load_challenge("tiny").to_dict()
    spec["engine"]["kinds"] = ["baseline"]
    only_baseline = tmp_path / "only-baseline.json"
    only_baseline.write_text(json.dumps(spec))
    with pytest.raises(SystemExit) as wrong_kind:
        main(
            ["submission", "init", str(tmp_path / "y"), "--engine", "vllm",
             "--challenge", str(only_baseline)]
        )  # fmt: skip
    assert wrong_kind.value.code == 2
