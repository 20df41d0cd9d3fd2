"""The competition end to end on SQLite: two teams on the fake Hub's whoami, their bundles
through ``podium submission submit --server``, a worker claiming over HTTP, the rows
published with the team and user the door authenticated.

The verification here is ``quick_verify`` (real intake, a real signed report, no engine);
``test_door_verifies.py`` runs the real pipeline through the same door.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
import pytest
import sqlalchemy as sa
from conftest import ADMIN, REPO, WORKER, serving
from doubles.sandbox import VerifyingSandbox

from competition.app import open_door
from competition.client import ServerQueue
from competition.db import bundles_t, charges_t
from competition.door import Door
from leaderboard.stores.local import LocalStore
from podium.cli.app import main
from podium.signing import KeyPair
from verifier.scale.worker import Worker, WorkerConfig

sys.path.insert(0, str(REPO / "tests" / "verifier" / "scale"))
from quickverify import quick_verify


def cli(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, token: str
) -> tuple[int, Any]:
    monkeypatch.setenv("HF_TOKEN", token)
    with pytest.raises(SystemExit) as done:
        main([*args, "--json"])
    out = capsys.readouterr().out
    return int(done.value.code or 0), json.loads(out)


@pytest.fixture
def door(tmp_path: Path, roster: Path, hub: Any, keypair: KeyPair) -> Iterator[Door]:
    d = open_door(
        db=f"sqlite:///{tmp_path / 'competition.db'}",
        roster=roster,
        challenge="tiny",
        admin_token=ADMIN,
        worker_tokens=[WORKER],
        store=str(tmp_path / "board"),
        key=keypair,
        quota_user=2,
    )
    yield d
    d.db.close()


def rows(door: Door, table: sa.Table) -> int:
    with door.db.tx() as conn:
        return int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())


def test_two_teams_enter_see_only_their_own_and_a_worker_publishes_their_rows(
    door: Door,
    bundles: dict[str, Path],
    tmp_path: Path,
    keypair: KeyPair,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with serving(door) as url:
        run = partial(cli, capsys=capsys, monkeypatch=monkeypatch)

        def submit(name: str, token: str) -> tuple[int, Any]:
            return run(["submission", "submit", str(bundles[name]), "--server", url], token=token)

        # each team's bundle is accepted, charged once; the same bundle again is free
        code, a = submit("acme", "tok-alice")
        assert code == 0 and a["charged"] and a["request"]["team"] == "acme", a
        code, r = submit("rival", "tok-carol")
        assert code == 0 and r["request"]["submitted_by"] == "carol", r
        code, again = submit("acme", "tok-alice")
        assert code == 0 and again["id"] == a["id"] and not again["charged"]

        # a user submitting under the other team's name: 403, naming both teams
        code, err = submit("acme", "tok-bob")
        assert code == 1 and "'acme'" in err["error"]["message"], err
        assert "'rival'" in err["error"]["message"]

        # the truncated bundle: refused with its finding id, nothing kept
        before = (rows(door, bundles_t), rows(door, charges_t), len(door.db.select()))
        code, err = submit("truncated", "tok-carol")
        assert code == 1 and err["error"]["finding_id"] == "bundle.corrupt", err
        assert (rows(door, bundles_t), rows(door, charges_t), len(door.db.select())) == before

        # another challenge's bundle: 422; no team: 403 naming the contact; a bad token: 401
        code, err = submit("other", "tok-alice")
        assert code == 2 and "fast-gemma" in err["error"]["message"], err
        code, err = submit("acme", "tok-mallory")
        assert code == 1 and "organizers@example.org" in err["error"]["hint"], err
        code, err = submit("acme", "tok-nobody")
        assert code == 2 and "hf auth login" in err["error"]["hint"], err
        assert httpx2.post(f"{url}/v1/submissions", content=b"x").status_code == 401

        # alice's quota (2 a day here): the second bundle fits, the third gets 429
        assert submit("acme2", "tok-alice")[0] == 0
        resp = httpx2.post(
            f"{url}/v1/submissions",
            content=bundles["acme3"].read_bytes(),
            headers={"Authorization": "Bearer tok-alice"},
        )
        assert resp.status_code == 429, resp.text
        assert 0 < int(resp.headers["Retry-After"]) <= 24 * 3600
        assert "next slot opens at" in resp.json()["error"]["message"]
        code, err = submit("acme3", "tok-alice")
        assert code == 3 and err["error"]["retry_after"] > 0

        # privacy: bob sees rival's request only, not acme's; no participant gets a bundle
        code, mine = run(["submission", "status", "--server", url], token="tok-bob")
        assert code == 0 and {x["team"] for x in mine["requests"]} == {"rival"}, mine
        assert mine["quota"]["team"]["used"] == 1
        code, err = run(["submission", "status", a["id"], "--server", url], token="tok-bob")
        assert code == 2 and err["error"]["type"] == "NotFound"
        bob = {"Authorization": "Bearer tok-bob"}
        for rid in (a["id"], r["id"]):
            got = httpx2.get(f"{url}/v1/worker/bundle/{rid}", headers=bob)
            assert got.status_code == 401 and b"gzip" not in got.content[:4]
        everything = httpx2.get(f"{url}/v1/requests", headers={"Authorization": f"Bearer {ADMIN}"})
        assert len(everything.json()["requests"]) == 3

        # a worker claims over HTTP, verifies, and the door publishes each signed row
        worker = Worker(
            WorkerConfig(
                queue=ServerQueue(url, WORKER, worker="w1"),
                key=keypair,
                runner=VerifyingSandbox,
                out_dir=tmp_path / "work",
                lease_s=60,
                poll_s=0.1,
                worker_id="w1",
                verify_fn=partial(quick_verify, ledger=tmp_path / "ledger"),
            )
        )
        handled = worker.loop.run(worker.work_one, until_empty=True)
        assert sorted(h.state for h in handled) == ["FINISHED"] * 3, handled
        code, seen = run(["submission", "status", a["id"], "--server", url], token="tok-alice")
        req = seen["request"]
        assert code == 0 and req["state"] == "FINISHED" and req["published"], req
        assert req["verdict"] == "UNOFFICIAL" and req["report"]["verdict"] == "UNOFFICIAL"
        assert "logs" not in req and "claim" not in req  # the worker's paths stay private

    records = LocalStore(tmp_path / "board").list_records()
    by_team = {rec["team"]: rec for rec in records}
    assert len(records) == 3 and set(by_team) == {"acme", "rival"}
    assert by_team["rival"]["submitter"] == {"team": "rival", "user": "carol"}
    assert all(rec["submitter"]["team"] == rec["team"] for rec in records)
    ledger = (tmp_path / "ledger").read_text().splitlines()
    assert len(ledger) == 3  # each request verified once
