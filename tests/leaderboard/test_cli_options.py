"""Bad options to the leaderboard commands: a usage error (exit 2) that names the value."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from factories import make_record

from leaderboard.publish import head_signer
from leaderboard.stores.local import LocalStore
from podium.cli.app import main
from podium.signing import KeyPair


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("--port", "99999", "99999 is not a port number"),
        ("--port", "-1", "-1 is not a port number"),
        ("--port", "abc", "'abc' is not a port number"),
    ],
)
def test_serve_refuses_a_bad_port_and_names_it(
    seeded_store: LocalStore,
    capsys: pytest.CaptureFixture[str],
    option: str,
    value: str,
    named: str,
) -> None:
    args = ["leaderboard", "serve", "--store", seeded_store.url, option, value]
    code, out, err = run(capsys, *args)
    assert code == 2 and named in err and "internal error" not in err
    code, out, _ = run(capsys, *args, "--json")
    error = json.loads(out)["error"]
    assert code == 2 and error["exit_code"] == 2 and named in error["message"]


def test_serve_blames_the_host_for_a_host_that_does_not_resolve(
    seeded_store: LocalStore, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["leaderboard", "serve", "--store", seeded_store.url, "--host", "999.1.1.1"]
    code, out, _ = run(capsys, *args, "--port", "0", "--json")
    error = json.loads(out)["error"]
    assert code == 2 and "--host '999.1.1.1'" in error["message"]
    assert "--host" in error["hint"] and "--port" not in error["hint"]


def test_show_of_a_misspelt_challenge_names_it_and_suggests_the_close_one(
    seeded_store: LocalStore, key_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "leaderboard", "show", "--store", seeded_store.url, "-c", "fast-gema"
    )
    flat = " ".join(err.split())
    assert code == 2 and "unknown challenge 'fast-gema'" in flat
    assert "did you mean fast-gemma?" in flat and "no records" not in flat
    args = ["--store", seeded_store.url, "--pubkey", str(key_files[1])]
    code, _, _ = run(capsys, "leaderboard", "show", *args, "-c", "fast-gemma")
    assert code == 0  # a known challenge with no rows in this store is an empty board


def test_export_writes_the_format_its_extension_names(
    tmp_path: Path,
    keypair: KeyPair,
    key_files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    store = LocalStore(tmp_path / "store")
    store.publish([make_record(keypair)], head_signer(keypair))
    base = ["leaderboard", "export", "--store", store.url, "--pubkey", str(key_files[1])]
    code, out, _ = run(capsys, *base, "-o", str(tmp_path / "lb.json"))
    assert code == 0 and "wrote 1 row to" in out and "1 rows" not in out
    (row,) = json.loads((tmp_path / "lb.json").read_text())
    assert row["team"] == "team-a"
    code, out, _ = run(capsys, *base, "-o", str(tmp_path / "lb.csv"))
    with open(tmp_path / "lb.csv", encoding="utf-8") as fh:
        assert [r["team"] for r in csv.DictReader(fh)] == ["team-a"]


def test_export_refuses_a_format_its_extension_contradicts_or_cannot_name(
    tmp_path: Path, keypair: KeyPair, capsys: pytest.CaptureFixture[str]
) -> None:
    store = LocalStore(tmp_path / "store")
    store.publish([make_record(keypair)], head_signer(keypair))
    base = ["leaderboard", "export", "--store", store.url, "--no-verify"]
    code, _, err = run(capsys, *base, "-o", str(tmp_path / "lb.json"), "--format", "csv")
    assert code == 2 and "disagrees" in err and not (tmp_path / "lb.json").exists()
    code, out, _ = run(capsys, *base, "-o", str(tmp_path / "lb.txt"), "--json")
    assert code == 2 and "'.txt'" in json.loads(out)["error"]["message"]
    assert not (tmp_path / "lb.txt").exists()
