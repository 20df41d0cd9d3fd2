"""Views never say yes to a broken board: ``show``, ``export`` and ``build-site`` exit 1
when the whole set does not check, as ``verify`` does; ``export`` then writes nothing;
``serve`` says so on its first line and on the page; a store with no signed head is a
warning; and the checked rows come as a ``datasets.Dataset`` in one call, where
``datasets.load_dataset`` returns a forged row."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from factories import make_record, plant_row, seeded_records
from tamper import Hub, Local
from typer.testing import CliRunner

from leaderboard.publish import head_signer
from leaderboard.stores import open_store
from leaderboard.stores.base import HEAD_PATH, record_path
from leaderboard.stores.card import render_card
from leaderboard.stores.local import LocalStore
from podium.cli.app import app
from podium.errors import SetCheckError
from podium.signing import KeyPair, write_keypair

runner = CliRunner()
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def pub(tmp_path: Path, keypair: KeyPair) -> str:
    return str(write_keypair(keypair, tmp_path / "keys" / "organizer.pem", overwrite=True))


def publish(where: Local | Hub, keypair: KeyPair) -> None:
    store = open_store(where.url)
    store.publish_key(keypair.public_pem())
    store.publish(seeded_records(keypair), head_signer(keypair))


def herons(keypair: KeyPair) -> str:
    return record_path(next(r for r in seeded_records(keypair) if r["team"] == "herons"))


def lb(*args: str) -> tuple[int, str]:
    res = runner.invoke(app, ["leaderboard", *args])
    return res.exit_code, res.stdout


def test_show_and_export_on_a_store_with_a_deleted_row_exit_1_and_export_writes_nothing(
    where: Local | Hub, keypair: KeyPair, pub: str, tmp_path: Path
) -> None:
    publish(where, keypair)
    args = ["--store", where.url, "--pubkey", pub]
    out = tmp_path / "lb.csv"
    assert lb("export", "-o", str(out), *args)[0] == 0 and out.is_file()  # the set checks
    before = out.read_bytes()
    where.delete(herons(keypair))
    code, text = lb("show", *args)
    assert code == 1 and "SET CHECK FAILED (missing): row herons/bf16" in " ".join(text.split())
    code, text = lb("show", *args, "--json")
    assert code == 1 and json.loads(text)["set_ok"] is False
    for name in ("lb.csv", "lb.json", "lb.parquet"):
        code, text = lb("export", "-o", str(tmp_path / "fresh" / name), *args, "--json")
        doc = json.loads(text)
        assert code == 1 and doc["output"] is None and doc["rows"] == 0
        assert not (tmp_path / "fresh").exists()  # no empty or partial file
    code, text = lb("export", "-o", str(out), *args)
    assert code == 1 and "nothing written" in text
    assert out.read_bytes() == before  # an earlier, proven export is left as it was
    code, _ = lb("build-site", "-o", str(tmp_path / "site"), *args)
    assert code == 1  # the site is written, and says so above the board


def test_a_store_with_no_signed_head_is_a_warning_for_a_first_time_viewer(
    keypair: KeyPair, pub: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalStore(tmp_path / "store")
    publish(Local(store.root), keypair)
    args = ["--store", store.url, "--pubkey", pub]
    assert lb("verify", *args)[0] == 0  # this viewer saw a head of it
    shutil.rmtree(store.root / "records")
    (store.root / HEAD_PATH).unlink()
    code, text = lb("show", *args)
    assert code == 1 and "SET CHECK FAILED (rollback)" in text
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "first-time-viewer"))
    code, text = lb("show", *args)
    flat = " ".join(text.split())
    assert code == 0 and "0 of 0 rows verified" in flat
    assert "WARNING: the store has no signed head" in flat and "nothing proves" in flat
    code, text = lb("verify", *args, "--json")
    doc = json.loads(text)
    assert code == 0 and [w["kind"] for w in doc["set_warnings"]] == ["no-head"]


def test_serve_says_the_set_fails_on_its_first_line_and_on_the_page(
    keypair: KeyPair, pub: str, tmp_path: Path
) -> None:
    store = Local(tmp_path / "store")
    publish(store, keypair)
    store.delete(herons(keypair))
    env = {**os.environ, "PYTHONPATH": f"{REPO_ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-c", "from podium.cli.app import main; main()"]
    args = ["leaderboard", "serve", "--store", store.url, "--pubkey", pub, "--port", "0"]
    proc = subprocess.Popen(
        [*cmd, *args], stderr=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert first.startswith("THE SET DOES NOT CHECK (missing, 1 in all)"), first
        url = proc.stderr.readline().split()[1]
        with urllib.request.urlopen(url, timeout=30) as resp:
            page = resp.read().decode()
        assert 'data-kind="missing"' in page and "row herons/bf16" in page
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def test_the_dataset_card_says_what_load_dataset_does_not_check() -> None:
    card = " ".join(render_card({}, "hf://datasets/org/lb", ["tiny"]).split())
    assert "`datasets.load_dataset` reads every file" in card and "**checks nothing**" in card
    assert "forged row" in card and "checked_dataset(" in card and "SetCheckError" in card


def dataset_rows(ds: Any) -> list[tuple[str, str]]:
    return sorted((r["team"], r["verdict"]) for r in ds)


def test_checked_dataset_gives_the_checked_rows_where_load_dataset_takes_a_forged_one(
    seeded_store: LocalStore, keypair: KeyPair, key_files: tuple[Path, Path]
) -> None:
    import datasets

    from leaderboard.dataset import checked_dataset

    pub = [key_files[1]]
    honest = checked_dataset(seeded_store.url, challenge="tiny", pubkeys=pub)
    assert isinstance(honest, datasets.Dataset) and len(honest) == 7
    assert "record_json" in honest.column_names and "bundle_sha256" in honest.column_names
    forger = KeyPair.generate()
    plant_row(seeded_store.root, make_record(forger, team="mallory", entry="x", tps=948.0))
    loaded = datasets.load_dataset(str(seeded_store.root), "tiny", split="train")
    assert ("mallory", "VERIFIED") in dataset_rows(loaded)  # checks nothing
    with pytest.raises(SetCheckError, match=r"does not check \(unlisted\)"):
        checked_dataset(seeded_store.url, challenge="tiny", pubkeys=pub)
