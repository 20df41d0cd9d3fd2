"""A store holding a forged row and a forged key: every view ranks only what it can prove.

The store is the seeded one (its organizer key under ``keys/``), then a hostile writer
changes one row's TPS and publishes a row signed by a key of its own, which puts that
key under ``keys/`` too. The viewer trusts only the organizer's key, named from outside
the store.
"""

from __future__ import annotations

import json
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from factories import forge_store
from typer.testing import CliRunner

from leaderboard.stores.local import LocalStore
from leaderboard.trust import build_trust
from leaderboard.views.web import make_server
from podium.cli.app import app
from podium.signing import KeyPair

runner = CliRunner()
GENUINE_RANKED = ["otters", "falcons"]  # herons' row is the altered one


@pytest.fixture
def forged(seeded_store: LocalStore, keypair: KeyPair) -> dict[str, str]:
    return forge_store(seeded_store.root, keypair, KeyPair.generate())


def show(store: LocalStore, *args: str, code: int = 1) -> Any:
    """``show``'s result; it exits ``code`` (1: a forged row is one no signed head lists,
    so the whole set does not check)."""
    res = runner.invoke(
        app, ["leaderboard", "show", "--store", store.url, *args], catch_exceptions=False
    )
    assert res.exit_code == code, res.output
    return res


def test_show_ranks_only_the_genuine_rows_and_lists_the_forged_apart(
    seeded_store: LocalStore, forged: dict[str, str], key_files: tuple[Path, Path]
) -> None:
    doc = json.loads(show(seeded_store, "--pubkey", str(key_files[1]), "--json").stdout)
    assert doc["checked"] is True
    (board,) = doc["boards"]
    assert [r["team"] for r in board["ranked"]] == GENUINE_RANKED
    assert all(r["key_id"] == doc["trusted_keys"][0]["key_id"] for r in board["ranked"])
    assert max(r["tps"] for r in board["ranked"]) < 9999
    bad = {b["path"]: b for b in doc["unverified"]}
    assert set(bad) == set(forged.values())
    assert bad[forged["altered"]]["kind"] == "bad-signature"
    assert "altered" in bad[forged["altered"]]["problem"]
    assert bad[forged["forged_key"]]["kind"] == "unknown-key"
    assert "published only inside this store" in bad[forged["forged_key"]]["problem"]
    assert bad[forged["forged_key"]]["team"] == "forger"


def test_show_for_humans_lists_the_forged_rows_under_unverified(
    seeded_store: LocalStore, forged: dict[str, str], key_files: tuple[Path, Path]
) -> None:
    out = show(seeded_store, "--pubkey", str(key_files[1])).stdout
    flat = " ".join(out.split())
    assert "6 of 8 rows verified" in flat and "2 unverified" in flat
    _, _, tables = out.partition("tiny: VERIFIED")  # the set check's warnings come first
    ranked, _, unverified = tables.partition("UNVERIFIED")
    assert "otters" in ranked and "forger" not in ranked and "9,999" not in ranked
    assert "SET CHECK FAILED (unlisted): row forger/fast" in out
    assert "SET CHECK FAILED (altered): row herons/bf16" in out
    assert "bad-signature" in unverified and "unknown-key" in unverified
    assert "99,999" not in out  # a forged row's own numbers are never shown


def test_a_key_only_inside_the_store_is_never_trusted(
    seeded_store: LocalStore, forged: dict[str, str]
) -> None:
    """With no --pubkey and no key in the tiny spec, nothing in the store is proven."""
    doc = json.loads(show(seeded_store, "--json").stdout)
    assert doc["boards"] == [] and len(doc["unverified"]) == 8
    assert {b["kind"] for b in doc["unverified"]} == {"unknown-key"}


def test_no_verify_says_plainly_that_nothing_was_checked(
    seeded_store: LocalStore, forged: dict[str, str]
) -> None:
    out = " ".join(show(seeded_store, "--no-verify", code=0).stdout.split())
    assert out.startswith("NOTHING WAS CHECKED (--no-verify)")
    doc = json.loads(show(seeded_store, "--no-verify", "--json", code=0).stdout)
    assert doc["checked"] is False and doc["boards"][0]["ranked"][0]["team"] == "forger"


def test_an_unreadable_file_is_reported_never_skipped(
    seeded_store: LocalStore, key_files: tuple[Path, Path]
) -> None:
    (seeded_store.root / "records" / "tiny" / "stray.txt").write_text("hello")
    (seeded_store.root / "records" / "loose.json").write_text("{}")
    doc = json.loads(show(seeded_store, "--pubkey", str(key_files[1]), "--json").stdout)
    bad = {b["path"]: b["kind"] for b in doc["unverified"]}
    assert bad == {"records/tiny/stray.txt": "unreadable", "records/loose.json": "unreadable"}


def test_serve_answers_only_the_genuine_rows_ranked_and_the_forged_apart(
    seeded_store: LocalStore, forged: dict[str, str], key_files: tuple[Path, Path]
) -> None:
    trust = build_trust([key_files[1]])
    server = make_server(seeded_store, "127.0.0.1", 0, trust=trust)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/records.json", timeout=30) as resp:
            doc = json.loads(resp.read())
    finally:
        server.shutdown()
        server.server_close()
    assert doc["checked"] is True and doc["count"] == 6
    by_id = {r["record_id"]: r for r in doc["records"]}
    ranked = [by_id[e["runs"][0]]["team"] for e in doc["boards"]["tiny"]["best"]]
    assert ranked == GENUINE_RANKED
    assert {r["team"] for r in doc["records"]}.isdisjoint({"forger"})
    assert {b["path"]: b["kind"] for b in doc["unverified"]} == {
        forged["altered"]: "bad-signature",
        forged["forged_key"]: "unknown-key",
    }
