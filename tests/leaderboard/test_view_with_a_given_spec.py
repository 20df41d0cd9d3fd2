"""Every view judges rows against a spec given by path: its keys replace the shipped spec's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from leaderboard.stores.local import LocalStore
from podium.cli.app import main


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(list(args))
    return int(done.value.code or 0), capsys.readouterr().out


def test_views_trust_the_key_a_locked_spec_pins(
    tmp_path: Path,
    seeded_store: LocalStore,
    key_files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = tmp_path / "tiny.locked.json"
    code, _ = cli(
        capsys, "challenge", "lock", "tiny", "--pubkey", str(key_files[1]), "-o", str(spec)
    )
    assert code == 0
    store = seeded_store.url
    # shipped tiny pins no key: nothing is verified
    code, out = cli(capsys, "leaderboard", "show", "--store", store, "-c", "tiny", "--json")
    shipped = json.loads(out)
    assert all(not b["ranked"] for b in shipped["boards"]) and len(shipped["unverified"]) == 7
    code, out = cli(capsys, "leaderboard", "show", "--store", store, "-c", str(spec), "--json")
    assert code == 0
    (board,) = json.loads(out)["boards"]
    assert [r["entry"] for r in board["ranked"]] == ["awq", "fp8-a", "bf16"]
    code, _ = cli(capsys, "leaderboard", "verify", "--store", store, "--json")
    assert code == 1
    code, out = cli(capsys, "leaderboard", "verify", "--store", store, "-c", str(spec), "--json")
    assert code == 0, out
    export = tmp_path / "rows.json"
    args = ["leaderboard", "export", "--store", store, "-c", str(spec), "-o", str(export)]
    code, out = cli(capsys, *args, "--json")
    assert code == 0 and json.loads(out)["rows"] == 7
    site = tmp_path / "site"
    args = ["leaderboard", "build-site", "--store", store, "-c", str(spec), "-o", str(site)]
    code, out = cli(capsys, *args, "--json")
    assert code == 0 and (site / "records.json").is_file()


def test_serve_trusts_the_key_a_locked_spec_pins(
    tmp_path: Path,
    seeded_store: LocalStore,
    key_files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    import subprocess
    import sys
    import urllib.request

    spec = tmp_path / "tiny.locked.json"
    code, _ = cli(
        capsys, "challenge", "lock", "tiny", "--pubkey", str(key_files[1]), "-o", str(spec)
    )
    assert code == 0
    args = ["leaderboard", "serve", "--store", seeded_store.url, "-c", str(spec), "--port", "0"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "podium.cli.app", *args, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = json.loads(proc.stdout.readline())["url"]
        with urllib.request.urlopen(url + "records.json", timeout=60) as answer:
            doc = json.loads(answer.read())
        assert [k["source"] for k in doc["trusted_keys"]] == ["challenge tiny"]
        assert doc["count"] == 7 and len(doc["boards"]["tiny"]["best"]) == 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)
