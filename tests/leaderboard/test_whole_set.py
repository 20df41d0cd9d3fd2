"""The board proves the whole set: a row deleted, added without the key, a store rolled
back, a frozen head or a head signed by an unknown key is each reported by ``verify``
(exit 1) and by ``show``, naming the row or the head; on a local folder and on the Hub.

Every tamper is done as a writer without the organizer's key would do it: on the files
of the folder, or by commits (and a force-push) on the fake Hub.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from factories import make_record, make_report, seeded_records
from tamper import Hub, Local
from typer.testing import CliRunner

from leaderboard.log import parse_head, sign_head
from leaderboard.publish import head_signer, publish_reports
from leaderboard.stores import open_store
from leaderboard.stores.base import record_bytes, record_path
from podium.cli.app import app
from podium.signing import KeyPair

runner = CliRunner()


@pytest.fixture
def pub(tmp_path: Path, keypair: KeyPair) -> str:
    from podium.signing import write_keypair

    return str(write_keypair(keypair, tmp_path / "keys" / "organizer.pem", overwrite=True))


def publish(where: Local | Hub, keypair: KeyPair, records: list[dict[str, Any]], **kw: Any) -> None:
    store = open_store(where.url)
    store.publish_key(keypair.public_pem())
    store.publish(records, head_signer(keypair, **kw))


def verify(where: Local | Hub, pub: str) -> tuple[int, dict[str, Any]]:
    res = runner.invoke(
        app, ["leaderboard", "verify", "--store", where.url, "--pubkey", pub, "--json"]
    )
    return res.exit_code, json.loads(res.stdout)


def show(where: Local | Hub, pub: str, code: int = 1) -> str:
    """``show``'s output; its exit status is ``code`` (1 when the set does not check)."""
    res = runner.invoke(app, ["leaderboard", "show", "--store", where.url, "--pubkey", pub])
    assert res.exit_code == code, res.output
    return " ".join(res.stdout.split())


def kinds(doc: dict[str, Any]) -> list[str]:
    return [p["kind"] for p in doc["set_problems"]]


def herons(where: Local | Hub, keypair: KeyPair) -> str:
    rec = next(r for r in seeded_records(keypair) if r["team"] == "herons")
    return record_path(rec)


def test_an_untouched_store_checks_as_a_whole(
    where: Local | Hub, keypair: KeyPair, pub: str
) -> None:
    publish(where, keypair, seeded_records(keypair))
    code, doc = verify(where, pub)
    assert code == 0, doc
    assert doc["set_ok"] and doc["head"]["version"] == 1 and doc["head"]["size"] == 7
    assert "the whole set checks against signed head v1" in show(where, pub, 0)


def test_a_deleted_row_is_reported_by_team_and_entry(
    where: Local | Hub, keypair: KeyPair, pub: str
) -> None:
    publish(where, keypair, seeded_records(keypair))
    victim = herons(where, keypair)
    where.delete(victim)
    code, doc = verify(where, pub)
    assert code == 1
    (problem,) = doc["set_problems"]
    assert problem["kind"] == "missing" and problem["path"] == victim
    assert (problem["team"], problem["entry"]) == ("herons", "bf16")
    out = show(where, pub)
    assert f"SET CHECK FAILED (missing): row herons/bf16 ({victim})" in out


@pytest.mark.parametrize("signed", [True, False], ids=["signed", "unsigned"])
def test_a_row_added_without_the_key_is_never_ranked(
    where: Local | Hub, keypair: KeyPair, pub: str, signed: bool
) -> None:
    publish(where, keypair, seeded_records(keypair))
    # a row that no head lists: unsigned, or even signed by the organizer's key
    planted = make_record(keypair, team="sneaky", entry="late", tps=99_999.0, serial=50)
    if not signed:
        planted.pop("signature")
    where.plant(record_path(planted), record_bytes(planted))
    code, doc = verify(where, pub)
    assert code == 1
    assert kinds(doc) == ["unlisted"] and doc["set_problems"][0]["team"] == "sneaky"
    assert [b["team"] for b in doc["bad"]] == ["sneaky"]
    bad = doc["bad"][0]
    if signed:
        assert bad["kind"] == "unlisted" and "head does not list" in bad["problem"], bad
    else:
        assert (bad["kind"], bad["problem"]) == ("schema", "unsigned"), bad
    out = show(where, pub)
    assert "SET CHECK FAILED (unlisted): row sneaky/late" in out and "99,999" not in out


def test_a_rollback_to_an_older_store_is_caught_by_the_viewers_memory(
    where: Local | Hub, keypair: KeyPair, pub: str
) -> None:
    publish(where, keypair, seeded_records(keypair))
    older = where.save()
    publish(where, keypair, [make_record(keypair, team="newcomer", tps=3000.0, serial=60)])
    assert verify(where, pub)[0] == 0  # the viewer checks head v2 and remembers it
    where.restore(older)  # every file genuine, every row signed: last week's store
    code, doc = verify(where, pub)
    assert code == 1 and kinds(doc) == ["rollback"]
    assert "head v1" in doc["set_problems"][0]["message"]
    assert "older than head v2" in doc["set_problems"][0]["message"]
    assert "SET CHECK FAILED (rollback)" in show(where, pub)


def test_a_rewritten_history_is_caught_even_with_a_newer_version(
    where: Local | Hub, keypair: KeyPair, pub: str
) -> None:
    """Consistency, not only the latest state: a later head must start with the leaves of
    the one the viewer checked, even one signed by the organizer's own key."""
    publish(where, keypair, seeded_records(keypair))
    assert verify(where, pub)[0] == 0
    head = parse_head(where.read("log/head.json"))
    victim = herons(where, keypair)
    kept = [leaf for leaf in head.leaves if leaf["path"] != victim]
    where.plant("log/head.json", sign_head(kept, head.version + 1, keypair))
    where.delete(victim)
    code, doc = verify(where, pub)
    assert code == 1 and kinds(doc) == ["inconsistent"]
    assert "does not extend head v1" in doc["set_problems"][0]["message"]


def test_a_stale_head_says_the_store_may_be_frozen(
    where: Local | Hub, keypair: KeyPair, pub: str
) -> None:
    weeks_ago = datetime.now(UTC) - timedelta(days=30)
    publish(where, keypair, seeded_records(keypair), now=lambda: weeks_ago)
    code, doc = verify(where, pub)
    assert code == 1 and kinds(doc) == ["stale"]
    assert "freshness bound of 7 days" in doc["set_problems"][0]["message"]
    assert "SET CHECK FAILED (stale): head v1" in show(where, pub)
    # the organizer's heartbeat: the same set, signed again now
    res = runner.invoke(
        app, ["leaderboard", "sign-head", "--store", where.url, "--key", pub[: -len(".pub")]]
    )
    assert res.exit_code == 0, res.output
    code, doc = verify(where, pub)
    assert code == 0 and doc["head"]["version"] == 2 and doc["head"]["size"] == 7


def test_a_head_signed_by_an_unknown_key_proves_nothing(
    where: Local | Hub, keypair: KeyPair, pub: str
) -> None:
    publish(where, keypair, seeded_records(keypair))
    head = parse_head(where.read("log/head.json"))
    stranger = KeyPair.generate()
    where.plant("log/head.json", sign_head(head.leaves, head.version + 1, stranger))
    code, doc = verify(where, pub)
    assert code == 1 and kinds(doc) == ["head-unknown-key"]
    assert stranger.key_id in doc["set_problems"][0]["message"]
    assert len(doc["bad"]) == 0 and doc["good"] == 7  # each row is still proven on its own
    out = show(where, pub)
    assert "SET CHECK FAILED (head-unknown-key): head v2" in out


def test_a_withdrawal_shows_on_the_board_and_deletes_nothing(
    where: Local | Hub, keypair: KeyPair, pub: str
) -> None:
    publish(where, keypair, seeded_records(keypair))
    otters = next(r for r in seeded_records(keypair) if r["team"] == "otters")
    res = runner.invoke(
        app,
        [
            "leaderboard",
            "withdraw",
            otters["record_id"],
            "--reason",
            "answers cached between runs",
            "--store",
            where.url,
            "--key",
            pub[: -len(".pub")],
        ],
    )
    assert res.exit_code == 0, res.output
    code, doc = verify(where, pub)
    assert code == 0 and doc["head"]["version"] == 2 and doc["head"]["size"] == 8
    (gone,) = doc["withdrawn"]
    assert gone["team"] == "otters" and gone["reason"] == "answers cached between runs"
    res = runner.invoke(
        app, ["leaderboard", "show", "--store", where.url, "--pubkey", pub, "--json"]
    )
    board = json.loads(res.stdout)
    assert [r["team"] for r in board["boards"][0]["ranked"]] == ["falcons", "herons"]
    assert board["withdrawn"][0]["record_id"] == otters["record_id"]
    out = show(where, pub, 0)
    assert "WITHDRAWN otters/awq" in out and "answers cached between runs" in out
    assert open_store(where.url).get(otters["record_id"]) is not None  # still there


def test_rotated_keys_carry_trust_and_revoked_keys_list_their_rows_apart(
    where: Local | Hub, keypair: KeyPair, pub: str, tmp_path: Path
) -> None:
    from podium.signing import write_keypair

    publish(where, keypair, seeded_records(keypair))
    new = KeyPair.generate()
    new_pem = write_keypair(new, tmp_path / "keys" / "new.pem").with_suffix("")
    res = runner.invoke(
        app,
        [
            "leaderboard",
            "rotate-key",
            "--store",
            where.url,
            "--key",
            pub[: -len(".pub")],
            "--new-key",
            str(new_pem),
        ],
    )
    assert res.exit_code == 0, res.output
    later = (datetime.now(UTC) + timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    report = make_report(new, team="after", entry="rotation", tps=1200.0, serial=70, finished=later)
    publish_reports([report], open_store(where.url), new)
    code, doc = verify(where, pub)  # the viewer still names only the old key
    assert code == 0, (doc["set_problems"], doc["bad"])
    assert doc["good"] == 8 and doc["head"]["key_id"] == new.key_id
    # a compromised key: rotate again, revoking, and every row the old key signed is apart
    newer = KeyPair.generate()
    newer_pem = write_keypair(newer, tmp_path / "keys" / "newer.pem").with_suffix("")
    res = runner.invoke(
        app,
        [
            "leaderboard",
            "rotate-key",
            "--store",
            where.url,
            "--key",
            str(new_pem),
            "--new-key",
            str(newer_pem),
            "--revoke",
        ],
    )
    assert res.exit_code == 0, res.output
    code, doc = verify(where, pub)
    assert code == 1
    (revoked,) = [b for b in doc["bad"] if b["kind"] == "revoked-key"]
    assert revoked["team"] == "after" and "revoked on 20" in revoked["problem"]
    assert doc["good"] == 7  # the first key's rows stand: only the revoked key's fall


def test_every_view_reports_a_deleted_row(
    where: Local | Hub, keypair: KeyPair, pub: str, tmp_path: Path
) -> None:
    """``export``, ``build-site`` and ``serve``'s ``/records.json`` say what ``verify`` says."""
    import urllib.request

    from leaderboard.trust import build_trust
    from leaderboard.views.web import make_server

    publish(where, keypair, seeded_records(keypair))
    victim = herons(where, keypair)
    where.delete(victim)

    def missing(doc: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
        return [(p["path"], p["team"], p["entry"]) for p in doc["set_problems"]]

    expected = [(victim, "herons", "bf16")]
    out = tmp_path / "lb.csv"
    args = ["--store", where.url, "--pubkey", pub, "--json"]
    res = runner.invoke(app, ["leaderboard", "export", "-o", str(out), *args])
    assert res.exit_code == 1 and missing(json.loads(res.stdout)) == expected
    assert not out.exists()  # nothing it could not prove
    res = runner.invoke(app, ["leaderboard", "export", "-o", str(out), *args[:-1]])
    assert res.exit_code == 1 and not out.exists()
    assert f"SET CHECK FAILED (missing): row herons/bf16 ({victim})" in " ".join(res.stdout.split())
    res = runner.invoke(app, ["leaderboard", "build-site", "-o", str(tmp_path / "site"), *args])
    assert res.exit_code == 1 and missing(json.loads(res.stdout)) == expected
    site = json.loads((tmp_path / "site" / "records.json").read_text())
    assert missing(site) == expected and not site["set_ok"]
    server = make_server(open_store(where.url), port=0, trust=build_trust([Path(pub)]))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        with urllib.request.urlopen(f"http://{host!s}:{port}/records.json", timeout=30) as resp:
            assert missing(json.loads(resp.read())) == expected
        with urllib.request.urlopen(f"http://{host!s}:{port}/", timeout=30) as resp:
            page = resp.read().decode()
        assert 'data-kind="missing"' in page and "row herons/bf16" in page  # the fallback
    finally:
        server.shutdown()
        server.server_close()
