"""The board after a key rotation: a viewer's memory of what it saw (heads, rotations,
revocations, withdrawals) defeats a store writer who holds no key, and a leaked key that
was revoked; bundles are leaves of the signed head; a rotation never turns a genuine row
unverified. On a local folder and on the fake Hub.

Every tamper is done as a writer without the organizer's key would do it (``tamper``);
the viewer is one user (one ``XDG_CACHE_HOME``) running ``podium leaderboard`` commands.
"""

from __future__ import annotations

import gzip
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from factories import make_report
from tamper import Hub, Local
from typer.testing import CliRunner

from leaderboard.log import parse_head, sign_head
from leaderboard.publish import (
    publish_bundle,
    publish_reports,
    rotate_key,
    withdraw,
)
from leaderboard.records import record_from_report
from leaderboard.stores import open_store
from leaderboard.stores.base import (
    HEAD_PATH,
    ROTATIONS_DIR,
    bundle_path,
    record_bytes,
    record_path,
)
from leaderboard.trust import build_trust
from leaderboard.views.web import BoardServer, make_server
from podium.canonical import sha256_bytes
from podium.cli.app import app
from podium.signing import KeyPair, public_raw_b64, sign_document, write_keypair

runner = CliRunner()


@pytest.fixture
def k1(tmp_path: Path, keypair: KeyPair) -> tuple[KeyPair, Path]:
    """The first organizer key and its private key file (the viewer trusts its .pub)."""
    path = tmp_path / "keys" / "k1.pem"
    write_keypair(keypair, path, overwrite=True)
    return keypair, path


def viewer(*args: str) -> tuple[int, dict[str, Any]]:
    res = runner.invoke(app, ["leaderboard", *args, "--json"])
    return res.exit_code, json.loads(res.stdout)


def verify(where: Local | Hub, k1: tuple[KeyPair, Path]) -> tuple[int, dict[str, Any]]:
    return viewer("verify", "--store", where.url, "--pubkey", f"{k1[1]}.pub")


def kinds(doc: dict[str, Any]) -> list[str]:
    return [p["kind"] for p in doc["set_problems"]]


def publish_one(where: Local | Hub, key: KeyPair, team: str, **kw: Any) -> dict[str, Any]:
    """Publish one VERIFIED row of ``team`` signed by ``key``; its record."""
    store = open_store(where.url)
    store.publish_key(key.public_pem())
    report = make_report(key, team=team, entry="e", tps=1000.0 + len(team), **kw)
    return publish_reports([report], store, key).records[0]


def test_a_rollback_across_a_rotation_is_caught_and_the_withdrawn_row_stays_out(
    where: Local | Hub, k1: tuple[KeyPair, Path]
) -> None:
    """K1 publishes A; a rotation to K2; K2 withdraws A and publishes B; a writer puts the
    files from before the rotation back (K2 is then trusted by no file in the store)."""
    key1 = k1[0]
    a = publish_one(where, key1, "alpha")
    assert verify(where, k1)[0] == 0
    before = where.save()
    key2 = KeyPair.generate()
    rotate_key(open_store(where.url), key1, key2)
    withdraw(open_store(where.url), key2, a["record_id"], "answers cached between runs")
    publish_one(where, key2, "beta")
    code, doc = verify(where, k1)
    assert code == 0, doc["set_problems"]
    assert doc["head"]["key_id"] == key2.key_id and doc["head"]["version"] == 4
    where.restore(before)
    code, doc = verify(where, k1)
    assert code == 1 and "rollback" in kinds(doc)
    assert "older than head v4" in doc["set_problems"][0]["message"]
    res = runner.invoke(
        app, ["leaderboard", "show", "--store", where.url, "--pubkey", f"{k1[1]}.pub", "--json"]
    )
    assert res.exit_code == 1
    shown = json.loads(res.stdout)
    ranked = [r["team"] for b in shown["boards"] for r in b["ranked"]]
    assert "alpha" not in ranked  # the remembered withdrawal still counts
    assert [w["team"] for w in shown["withdrawn"]] == ["alpha"]


def test_a_revoked_key_that_comes_back_fails_the_set_check(
    where: Local | Hub, k1: tuple[KeyPair, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After ``rotate-key --revoke K1``, the holder of the leaked K1 puts back the files
    from before the rotation, signs a fresh head with ``sign-head`` and publishes a row."""
    key1, key1_file = k1
    publish_one(where, key1, "alpha")
    before = where.save()
    key2 = KeyPair.generate()
    rotate_key(open_store(where.url), key1, key2, revoked=True, reason="leaked")
    code, doc = verify(where, k1)  # the viewer sees the revocation (alpha is listed apart)
    assert code == 1 and [b["kind"] for b in doc["bad"]] == ["revoked-key"]
    assert not doc["set_problems"]
    where.restore(before)
    res = runner.invoke(
        app, ["leaderboard", "sign-head", "--store", where.url, "--key", str(key1_file)]
    )
    assert res.exit_code == 0, res.output
    publish_one(where, key1, "mallory", serial=9)
    code, doc = verify(where, k1)
    assert code == 1 and kinds(doc)[0] == "head-revoked-key"
    assert doc["good"] == 0 and {b["kind"] for b in doc["bad"]} == {"revoked-key"}
    # the attack is real: a viewer that never saw the revocation is fooled, as no memory
    # can help it (the organizers' next spec release names the revoked key)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-viewer"))
    code, doc = verify(where, k1)
    assert code == 0 and doc["good"] == 2


def test_a_rotation_a_revoked_key_signs_after_its_revocation_is_refused(
    where: Local | Hub, k1: tuple[KeyPair, Path]
) -> None:
    """The holder of the leaked K1, revoked, signs a rotation to a key of its own dated
    before the revocation (so that, in order of time, K1 was still good), and a head with
    that key that extends the one seen and lists a row of its own."""
    key1 = k1[0]
    publish_one(where, key1, "alpha")
    rotate_key(open_store(where.url), key1, KeyPair.generate(), revoked=True)
    assert not verify(where, k1)[1]["set_problems"]  # the viewer saw the revocation
    seen = parse_head(where.read(HEAD_PATH))
    mallory = KeyPair.generate()
    rotation = sign_document(
        {
            "schema_version": 1,
            "kind": "podium.key-rotation",
            "key_id": key1.key_id,
            "new_key_id": mallory.key_id,
            "new_public_key": public_raw_b64(mallory.public_key),
            "at": "2026-12-01T00:00:00Z",
            "revoked": False,
        },
        key1,
    )
    row = record_from_report(make_report(mallory, team="mallory", entry="e", serial=8), mallory)
    files = {
        f"{ROTATIONS_DIR}/{mallory.key_id}.json": record_bytes(rotation),
        record_path(row): record_bytes(row),
    }
    leaves = [*seen.leaves, *({"path": p, "sha256": sha256_bytes(d)} for p, d in files.items())]
    for path, data in files.items():
        where.plant(path, data)
    where.plant(HEAD_PATH, sign_head(leaves, seen.version + 1, mallory))
    code, doc = verify(where, k1)
    assert code == 1 and kinds(doc) == ["head-unknown-key", "bad-document"]
    assert "saw revoked" in doc["set_problems"][1]["message"]
    assert doc["good"] == 0


def test_a_backdated_head_from_a_retired_key_is_inconsistent(
    where: Local | Hub, k1: tuple[KeyPair, Path]
) -> None:
    """K1, rotated away (not revoked), signs a head that extends the one seen and lists a
    new row, dated before the rotation so that K1 was still valid then."""
    key1 = k1[0]
    publish_one(where, key1, "alpha")
    rotate_key(open_store(where.url), key1, KeyPair.generate())
    assert verify(where, k1)[0] == 0
    seen = parse_head(where.read(HEAD_PATH))
    row = record_from_report(make_report(key1, team="mallory", entry="e", serial=7), key1)
    data = record_bytes(row)
    leaves = [*seen.leaves, {"path": record_path(row), "sha256": sha256_bytes(data)}]
    backdated = datetime(2026, 12, 1, tzinfo=UTC)
    where.plant(record_path(row), data)
    where.plant(HEAD_PATH, sign_head(leaves, seen.version + 1, key1, now=backdated))
    code, doc = verify(where, k1)
    assert code == 1 and kinds(doc) == ["inconsistent"]
    assert "backdated" in doc["set_problems"][0]["message"]


def test_a_row_run_before_a_rotation_and_published_after_it_is_verified(
    where: Local | Hub, k1: tuple[KeyPair, Path]
) -> None:
    """``verified_at`` (the report's floored ``finished``) is earlier than the rotation;
    the new key signs the row. It is genuine: never ``unknown-key``."""
    key1 = k1[0]
    publish_one(where, key1, "alpha")
    key2 = KeyPair.generate()
    rotate_key(open_store(where.url), key1, key2)
    late = publish_one(where, key2, "beta", finished="2026-11-20T10:00:00Z")
    assert late["verified_at"] < parse_head(where.read(HEAD_PATH)).made_at
    code, doc = verify(where, k1)
    assert code == 0, (doc["bad"], doc["set_problems"])
    assert doc["good"] == 2 and doc["keys_used"] == {key1.key_id: 1, key2.key_id: 1}


# -- bundles are leaves of the signed head ---------------------------------------------


def bundled_report(key: KeyPair, data: bytes) -> dict[str, Any]:
    """A signed report of the bundle ``data``."""
    report = make_report(key, team="gamma", entry="e")
    body = {k: v for k, v in report.items() if k != "signature"}
    body["submission"] = {**body["submission"], "bundle_sha256": sha256_bytes(data)}
    return sign_document(body, key)


@pytest.fixture
def served(where: Local | Hub, k1: tuple[KeyPair, Path]) -> Iterator[tuple[BoardServer, str]]:
    """A store holding one bundle, listed in its head, and ``serve`` over it."""
    key1 = k1[0]
    store = open_store(where.url)
    store.publish_key(key1.public_pem())
    data = gzip.compress(b"the bundle that was verified", mtime=0)
    assert publish_bundle(store, key1, data)["added"]
    publish_reports([bundled_report(key1, data)], store, key1)
    server = make_server(
        open_store(where.url), port=0, trust=build_trust([Path(f"{k1[1]}.pub")]), ttl=0
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield server, f"http://{host!s}:{port}/"
    finally:
        server.shutdown()
        server.server_close()


def fetch(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_a_swapped_bundle_is_refused_by_serve_and_export(
    where: Local | Hub, k1: tuple[KeyPair, Path], served: tuple[BoardServer, str], tmp_path: Path
) -> None:
    _, url = served
    code, doc = verify(where, k1)
    assert code == 0, doc["set_problems"]
    head = parse_head(where.read(HEAD_PATH))
    (leaf,) = [x for x in head.leaves if x["path"].startswith("bundles/")]
    sha = leaf["sha256"]
    assert leaf["path"] == bundle_path(sha)
    records = json.loads(fetch(url + "records.json")[1])
    assert records["bundles"] == {sha: bundle_path(sha)}  # the link goes through serve
    status, body = fetch(url + bundle_path(sha))
    assert status == 200 and sha256_bytes(body) == sha
    pub = ["--pubkey", f"{k1[1]}.pub"]
    out, bundles = tmp_path / "lb.csv", tmp_path / "bundles"
    args = ["export", "-o", str(out), "--bundles", str(bundles), "--store", where.url, *pub]
    code, done = viewer(*args)
    assert code == 0 and done["bundles"] == [sha]
    assert (bundles / f"{sha}.tar.gz").read_bytes() == body
    out.unlink()
    (bundles / f"{sha}.tar.gz").unlink()
    # a writer without the key puts other bytes under the verified row's link
    where.plant(bundle_path(sha), gzip.compress(b"something else entirely", mtime=0))
    status, body = fetch(url + bundle_path(sha))
    assert status == 409 and b"swapped" in body
    code, doc = verify(where, k1)  # verify reads every listed bundle
    assert code == 1 and kinds(doc) == ["altered"]
    assert "swapped" in doc["set_problems"][0]["message"]
    code, done = viewer(*args)
    assert code == 1 and "swapped" in done["refused_bundles"][0]
    assert not out.exists() and not (bundles / f"{sha}.tar.gz").exists()


def test_a_bundle_no_head_lists_is_never_linked_nor_handed_out(
    where: Local | Hub, k1: tuple[KeyPair, Path], served: tuple[BoardServer, str]
) -> None:
    _, url = served
    stray = gzip.compress(b"planted", mtime=0)
    sha = sha256_bytes(stray)
    where.plant(bundle_path(sha), stray)
    code, doc = verify(where, k1)
    assert code == 1 and kinds(doc) == ["unlisted"]
    assert sha not in json.loads(fetch(url + "records.json")[1])["bundles"]
    status, body = fetch(url + bundle_path(sha))
    assert status == 409 and b"not listed" in body


def test_publish_bundle_makes_a_bundle_a_leaf_of_the_head_once(
    where: Local | Hub, k1: tuple[KeyPair, Path], tmp_path: Path
) -> None:
    data = gzip.compress(b"an entry", mtime=0)
    (tmp_path / "entry.tar.gz").write_bytes(data)
    args = ["publish-bundle", str(tmp_path / "entry.tar.gz"), "--store", where.url]
    for added in (True, False):  # idempotent: the second adds nothing, signs no new head
        code, doc = viewer(*args, "--key", str(k1[1]))
        assert code == 0 and doc["bundles"][0]["added"] is added
    sha = sha256_bytes(data)
    head = parse_head(where.read(HEAD_PATH))
    assert head.version == 1 and head.leaves == [{"path": bundle_path(sha), "sha256": sha}]
    assert where.read(bundle_path(sha)) == data
