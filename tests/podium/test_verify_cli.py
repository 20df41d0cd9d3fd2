"""``podium verify`` and ``selfcheck`` output for a bundle that never gets to run."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from podium.cli.app import main
from schemas.challenge import load_challenge
from submission.bundle import package
from submission.scaffold import init_submission

FAKE_DIGEST = "sha256:" + "ab" * 32
HOSTILE = "[/]oops [bold red]x\x1b[31mred <img src=x onerror=alert(1)>"


@pytest.fixture()
def bundle(tmp_path: Path) -> Path:
    directory = tmp_path / "entry"
    init_submission(directory, load_challenge("tiny"), team="acme")
    made = package(directory, tmp_path / "dist", base_digest=FAKE_DIGEST, build=False)
    assert made.bundle is not None
    return made.bundle.path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def test_a_truncated_bundle_is_rejected_without_an_empty_table_or_unknown_names(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(bundle.read_bytes()[: bundle.stat().st_size // 2])
    args = ["verify", str(truncated), "--runner", "process", "-o", str(tmp_path / "out")]
    code, out, _ = run(args, capsys)
    assert code == 1
    assert "REJECTED bundle" in out and "its manifest could not be read" in out
    assert "unknown/unknown" not in out and "metric" not in out
    assert "bundle.corrupt" in out and "\nnext: " in out
    code, out, _ = run([*args, "--json"], capsys)
    assert code == 1 and json.loads(out)["verdict"] == "REJECTED"


def test_a_hostile_manifest_is_reported_as_text(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = tmp_path / "hostile.tar.gz"
    with tarfile.open(bundle) as src, tarfile.open(hostile, "w:gz") as dst:
        for member in src.getmembers():
            data = src.extractfile(member).read()  # type: ignore[union-attr]
            if member.name == "manifest.json":
                doc = json.loads(data)
                doc["team"] = HOSTILE
                data = json.dumps(doc).encode()
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data))
    code, out, err = run(
        ["verify", str(hostile), "--runner", "process", "-o", str(tmp_path / "out")], capsys
    )
    assert code == 1 and "Traceback" not in err
    assert "\x1b" not in out and "[/]oops [bold red]x\\x1b[31mred" in out


def test_a_selfcheck_says_it_is_never_signed_and_names_no_missing_option(
    bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(bundle.read_bytes()[:200])  # not even its manifest can be read
    code, out, _ = run(
        ["submission", "selfcheck", str(truncated), "--runner", "process", "-o", str(tmp_path)],
        capsys,
    )
    assert code == 1
    assert "self-checks are never signed" in out and "--key" not in out
    assert "\nnext: fix the findings above" in out
