"""A participant's first hour: every mistake caught on the first ``validate``, each named
with where it is and what would be accepted, and a refusal that leaves the entry alone."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from podium.cli.app import main
from schemas.challenge import load_challenge
from submission.bundle import package
from submission.scaffold import init_submission

FAKE_DIGEST = "sha256:" + "ab" * 32


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def _edit(directory: Path, *pairs: tuple[str, str]) -> None:
    path = directory / "podium.toml"
    text = path.read_text()
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new, 1)
    path.write_text(text)


def _line(directory: Path, text: str) -> int:
    return (directory / "podium.toml").read_text().splitlines().index(text) + 1


BREAKAGES = (
    ('team = "my-team"', 'tema = "my-team"'),  # a misspelt key, and so a missing one
    ('entry = "broken"', 'entry = "-bad"'),  # not a valid name
    ("port = 8000", 'port = "8000"'),  # a string for a number
    # init writes no knob on fast-gemma (vLLM's defaults), only an example to uncomment
    ("# MAX_MODEL_LEN = 4096", 'MAX_MODEL_LEN = "lots"\nMAX_MODEL_LENN = 512'),  # type; typo
)


def test_the_walk_from_init_to_package_reports_every_fault_on_the_first_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "broken"
    code, _, _ = run(
        ["submission", "init", str(directory), "-c", "fast-gemma", "--engine", "vllm"], capsys
    )
    assert code == 0
    _edit(directory, *BREAKAGES)
    code, out, _ = run(["submission", "validate", str(directory), "--json"], capsys)
    assert code == 1
    found = {(f["check_id"], f["where"], f["severity"]) for f in json.loads(out)["findings"]}

    def at(text: str, key: str) -> str:
        return f"podium.toml:{_line(directory, text)} {key}"

    assert found == {
        ("submission.config-schema", "podium.toml", "error"),  # no team
        ("submission.config-schema", at('tema = "my-team"', "tema"), "error"),
        ("submission.name", at('entry = "-bad"', "entry"), "error"),
        ("submission.config-schema", at('port = "8000"', "engine.port"), "error"),
        ("config.schema", at('MAX_MODEL_LEN = "lots"', "MAX_MODEL_LEN"), "error"),
        ("config.no-such-knob", at("MAX_MODEL_LENN = 512", "MAX_MODEL_LENN"), "error"),
    }
    code, out, _ = run(["submission", "validate", str(directory)], capsys)
    assert code == 1 and out.startswith("6 errors:\n")
    assert out.count("\n  error   [") == 6
    for hint in ("did you mean 'team'?", "did you mean MAX_MODEL_LEN?", "integer 16..1048576"):
        assert hint in out
    # every fault fixed at once: the next validate is clean and the entry packages
    _edit(directory, *((new, old) for old, new in BREAKAGES))
    code, out, _ = run(["submission", "validate", str(directory / "podium.toml")], capsys)
    assert code == 0 and "is a valid submission" in out
    code, out, _ = run(
        [
            "submission",
            "package",
            str(directory),
            "-o",
            str(tmp_path / "dist"),
            "--no-build",
            "--base-digest",
            FAKE_DIGEST,
            "--json",
        ],
        capsys,
    )
    assert code == 0 and json.loads(out)["bundle"]


def test_team_and_challenge_mistakes_beside_schema_errors_are_all_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "e"
    init_submission(directory, load_challenge("tiny"), kind="baseline", team="acme", entry="e1")
    _edit(
        directory,
        ('challenge = "tiny"', 'challenge = "tinny"'),
        ('team = "acme"', 'team = "-bad"'),
        ("port = 8000", "port = 99999"),
    )
    code, out, _ = run(["submission", "validate", str(directory), "--json"], capsys)
    findings = {f["check_id"]: f for f in json.loads(out)["findings"]}
    assert code == 1 and set(findings) == {
        "submission.unknown-challenge",
        "submission.name",
        "submission.config-schema",
    }
    assert findings["submission.unknown-challenge"]["hint"].startswith("did you mean 'tiny'?")
    assert "'tinny'" in findings["submission.unknown-challenge"]["message"]
    assert findings["submission.name"]["hint"] == "rename team, e.g. team = 'bad'"
    assert "1 to 65535" in findings["submission.config-schema"]["hint"]


def _claimed(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "a", tmp_path / "b"
    for directory in (first, second):
        init_submission(directory, load_challenge("tiny"), kind="baseline", team="t", entry="e")
    return first, second


def test_a_refused_package_writes_nothing_into_the_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = _claimed(tmp_path)
    dist = tmp_path / "dist"
    assert package(first, dist, base_digest=FAKE_DIGEST, build=False).ok
    before = sorted(p.name for p in second.iterdir())
    args = ["submission", "package", str(second), "-o", str(dist), "--no-build"]
    code, _, err = run([*args, "--base-digest", FAKE_DIGEST], capsys)
    assert code == 2 and "would replace it" in err
    assert sorted(p.name for p in second.iterdir()) == before
    assert not (second / "manifest.json").exists()


def test_the_bundle_is_readable_by_others(
    make_submission: Callable[..., Path], tmp_path: Path
) -> None:
    old = os.umask(0o022)
    try:
        result = package(make_submission(), tmp_path / "dist", base_digest=FAKE_DIGEST, build=False)
    finally:
        os.umask(old)
    assert result.bundle is not None
    assert stat.S_IMODE(result.bundle.path.stat().st_mode) == 0o644


def test_a_path_of_the_wrong_kind_is_named_or_taken_for_what_it_means(
    make_submission: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    directory = make_submission()
    code, out, _ = run(["submission", "validate", str(directory / "podium.toml")], capsys)
    assert code == 0 and "is a valid submission" in out
    (directory / "notes.txt").write_text("x")
    code, _, err = run(["submission", "validate", str(directory / "notes.txt")], capsys)
    assert code == 2 and "is a file, but a submission directory is expected" in err
    code, _, err = run(["submission", "inspect", str(directory)], capsys)
    assert code == 2 and "is a directory, but a bundle" in err
    assert f"podium submission package {directory}" in err
