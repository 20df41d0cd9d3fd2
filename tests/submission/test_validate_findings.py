"""Each participant-side finding fires on the mistake it names (the honest case is in
``test_validate.py::test_init_then_validate_has_no_findings``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from submission.validate import validate_submission

Make = Callable[..., Path]


def _ids(directory: Path) -> list[str]:
    return [f.check_id for f in validate_submission(directory).findings]


def _edit(directory: Path, old: str, new: str) -> None:
    path = directory / "podium.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.fires("submission.config-parse")
def test_a_podium_toml_that_is_not_toml(make_submission: Make) -> None:
    directory = make_submission()
    (directory / "podium.toml").write_text("challenge = tiny\n[engine\n")
    # each broken line is named: the first is set aside and the rest parsed again
    assert _ids(directory) == ["submission.config-parse"] * 2


@pytest.mark.fires("submission.unknown-challenge")
def test_a_challenge_podium_does_not_know(make_submission: Make) -> None:
    directory = make_submission()
    _edit(directory, 'challenge = "tiny"', 'challenge = "no-such-challenge"')
    assert "submission.unknown-challenge" in _ids(directory)


@pytest.mark.fires("submission.served-model-name")
def test_two_served_model_names(make_submission: Make) -> None:
    directory = make_submission()
    _edit(directory, "[engine.config]\n", '[engine.config]\nSERVED_MODEL_NAME = "other"\n')
    assert _ids(directory) == ["submission.served-model-name"]


@pytest.mark.fires("submission.requirements")
def test_a_requirement_that_is_not_pinned_plainly(make_submission: Make) -> None:
    directory = make_submission()
    (directory / "requirements.txt").write_text("-e git+https://example.invalid/x.git\n")
    assert _ids(directory) == ["submission.requirements"]


@pytest.mark.fires("submission.origin-missing")
def test_an_imported_entry_without_its_original_manifest(make_submission: Make) -> None:
    directory = make_submission()
    text = (directory / "podium.toml").read_text()
    (directory / "podium.toml").write_text(
        text + '\n[origin]\nformat = "fast-gemma"\nmanifest = "original.json"\n'
    )
    assert "submission.origin-missing" in _ids(directory)
