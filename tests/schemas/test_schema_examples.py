"""Every schema accepts its valid example and rejects each invalid one at the expected JSON path."""

from __future__ import annotations

from pathlib import Path

import pytest

from podium.errors import SchemaError
from schemas.challenge import load_challenge
from schemas.manifest import Manifest
from schemas.report import Report
from schemas.validate import load_and_validate, read_json, validate, validation_errors

EXAMPLES = Path(__file__).parent / "examples"


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("manifest", "manifest.valid.json"),
        ("report", "report.valid.json"),
        ("record", "record.valid.json"),
        ("queue-request", "queue-request.valid.json"),
    ],
)
def test_valid_examples_pass(kind: str, name: str) -> None:
    load_and_validate(kind, EXAMPLES / name)


@pytest.mark.parametrize("name", ["fast-gemma", "tiny"])
def test_shipped_challenges_are_valid(name: str) -> None:
    spec = load_challenge(name)
    assert spec.id == name


@pytest.mark.parametrize(
    ("kind", "name", "path", "expected"),
    [
        ("challenge", "challenge.invalid-no-gpu-name.json", "$.hardware", "required"),
        ("challenge", "challenge.invalid-num-prompts.json", "$.tps.num_prompts", "minimum 1"),
        ("challenge", "challenge.invalid-ratio-without-max.json", "$.quality", "required"),
        ("manifest", "manifest.invalid-traversal.json", "$.files[0].path", "a string matching"),
        (
            "manifest",
            "manifest.invalid-digest.json",
            "$.engine.base_image.digest",
            "a string matching",
        ),
        ("report", "report.invalid-verdict.json", "$.verdict", "one of"),
        ("report", "report.invalid-ci.json", "$.metrics.tps.ci95", "minItems"),
        ("record", "record.invalid-missing-team.json", "$", "required"),
        ("record", "record.invalid-tps-type.json", "$.metrics.tps", "type"),
        ("queue-request", "queue-request.invalid-state.json", "$.state", "one of"),
        (
            "engine-config",
            "engine-config.invalid-types.json",
            "$.GPU_MEMORY_UTILIZATION",
            "maximum",
        ),
    ],
)
def test_invalid_examples_fail_at_expected_path(
    kind: str, name: str, path: str, expected: str
) -> None:
    file = EXAMPLES / name
    with pytest.raises(SchemaError) as info:
        validate(kind, read_json(file), file=str(file))
    err = info.value
    paths = {e.json_path for e in err.errors}
    assert path in paths, paths
    match = next(e for e in err.errors if e.json_path == path)
    assert match.expected is not None and expected in match.expected
    assert str(file) in str(match)  # the error names the file


def test_all_errors_are_collected_at_once() -> None:
    errors = validation_errors(
        "engine-config", read_json(EXAMPLES / "engine-config.invalid-types.json")
    )
    assert {e.json_path for e in errors} >= {"$.SLIDING_WINDOW", "$.GPU_MEMORY_UTILIZATION"}
    assert any("lower_case" in e.message for e in errors)  # key pattern


def test_malformed_json_names_file_and_position(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1,,}')
    with pytest.raises(SchemaError) as info:
        read_json(bad)
    assert str(bad) in str(info.value) and "line 1" in info.value.message


@pytest.mark.parametrize(
    ("cls", "kind", "name"),
    [(Manifest, "manifest", "manifest.valid.json"), (Report, "report", "report.valid.json")],
)
def test_dataclasses_round_trip(cls: type, kind: str, name: str) -> None:
    doc = read_json(EXAMPLES / name)
    obj = cls.parse(doc)
    assert obj.to_dict() == doc
    assert cls.from_dict(obj.to_dict()) == obj


@pytest.mark.parametrize("name", ["fast-gemma", "tiny"])
def test_challenge_round_trips(name: str) -> None:
    spec = load_challenge(name)
    doc = read_json(Path(spec.source or ""))
    assert spec.to_dict() == doc
