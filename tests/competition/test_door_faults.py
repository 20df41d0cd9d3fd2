"""Faults at the door, on SQLite: a restart, a revoked worker token, the organizer's actions.

Workers here call the worker API directly (``ServerQueue``), so each step of a lease is
seen; the whole loop runs in ``test_door_scenario.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from conftest import ADMIN, WORKER, serving

from competition.app import open_door
from competition.client import DoorClient, ServerQueue
from competition.door import Door, Participant
from competition.errors import NotLoggedIn, WrongChallenge
from podium.errors import BundleError, UsageError
from podium.signing import KeyPair
from verifier.scale.queue import request as rq

OpenDoor = Callable[..., Door]


@pytest.fixture
def opener(tmp_path: Path, roster: Path, hub: Any, keypair: KeyPair) -> OpenDoor:
    def make(publish: bool = True) -> Door:
        return open_door(
            db=f"sqlite:///{tmp_path / 'c.db'}",
            roster=roster,
            challenge="tiny",
            admin_token=ADMIN,
            worker_tokens=[WORKER, "second-worker"],
            store=str(tmp_path / "board") if publish else None,
            key=keypair,
        )

    return make


def test_a_restart_keeps_requests_quotas_and_leases(
    opener: OpenDoor, bundles: dict[str, Path]
) -> None:
    door = opener()
    alice = Participant("alice", "acme")
    req, charged = door.submit(alice, bundles["acme"])
    door.submit(alice, bundles["acme2"])
    claimed = door.db.claim("w-x/one", 600)
    assert claimed is not None and charged and door.db.claim("w-x/one", 600) is not None
    door.db.close()

    again = opener()  # the same database, the same tokens passed again
    held = again.db.get(claimed[0].request_id)
    assert held.state == rq.RUNNING and held.claim is not None
    assert held.claim["token"] == claimed[1].token
    assert again.db.claim("w-y/two", 600) is None  # both leases still hold
    with again.db.tx() as conn:
        used = again.usage(conn, alice, rq.now().timestamp())
    assert used["user"].used == 2 and used["team"].used == 2
    assert {r.request_id for r in again.db.select()} >= {req.request_id}
    again.db.close()


def test_a_revoked_worker_token_ends_its_lease_and_another_worker_takes_over(
    opener: OpenDoor, bundles: dict[str, Path], tmp_path: Path
) -> None:
    door = opener()
    door.submit(Participant("alice", "acme"), bundles["acme"])
    with serving(door) as url:
        first = ServerQueue(url, WORKER, worker="first")
        second = ServerQueue(url, "second-worker", worker="second")
        got = first.claim("first", 600)
        assert got is not None and second.claim("second", 600) is None
        req, claim = got
        bundle = first.fetch_bundle(req, tmp_path / "b")
        assert bundle.stat().st_size == req.doc["bundle"]["size"]
        # another worker token cannot fetch it, nor conclude it
        with pytest.raises(UsageError):
            second.fetch_bundle(req, tmp_path / "c")

        admin = DoorClient(url, ADMIN)
        name = next(t["name"] for t in admin.get("/v1/admin/workers")["tokens"])
        done = admin.post(f"/v1/admin/workers/{name}/revoke")
        assert done["released"] == [req.request_id]

        # the revoked worker's lease is gone: renewing reports it lost, concluding is refused
        assert first.renew([claim], 600) == ([], [req.request_id])
        with pytest.raises(NotLoggedIn):
            first.fail(claim, "too late")
        took = second.claim("second", 600)
        assert took is not None and took[1].worker.endswith("/second")
        history = [h.get("note", "") for h in took[0].doc["history"]]
        assert any("revoked" in note for note in history), history
        second.fail(took[1], "the test ends here")
        assert door.db.get(req.request_id).state == rq.FAILED


def test_the_organizer_counts_retries_cancels_reverifies_and_gets_an_eta(
    opener: OpenDoor, bundles: dict[str, Path]
) -> None:
    door = opener(publish=False)  # a door with no store: a conclusion needs no report
    a, _ = door.submit(Participant("alice", "acme"), bundles["acme"])
    b, _ = door.submit(Participant("bob", "rival"), bundles["rival"])
    with serving(door) as url:
        admin = DoorClient(url, ADMIN)
        assert admin.get("/v1/admin/counts")["counts"][rq.PENDING] == 2
        eta = admin.get("/v1/admin/eta")
        assert eta["eta_s"] is None and eta["why_none"] == "no worker heard from recently"

        worker = ServerQueue(url, WORKER, worker="w")
        got = worker.claim("w", 600)
        assert got is not None
        worker.fail(got[1], "the engine did not start")
        admin.post(f"/v1/admin/requests/{a.request_id[:8]}/retry")
        admin.post(f"/v1/admin/requests/{b.request_id}/cancel")
        counts = admin.get("/v1/admin/counts")["counts"]
        assert counts[rq.PENDING] == 1 and counts[rq.CANCELLED] == 1

        got = worker.claim("w", 600)
        assert got is not None
        worker.finish(got[1], {"verdict": "UNOFFICIAL", "report_id": "0" * 16})
        eta = admin.get("/v1/admin/eta")
        assert eta["live_workers"] == 1 and eta["measured_attempts"] == 2
        assert eta["pending"] == 0 and eta["eta_s"] == 0

        admin.post(f"/v1/admin/requests/{a.request_id}/reverify")
        eta = admin.get("/v1/admin/eta")
        assert eta["pending"] == 1 and eta["eta_s"] == eta["median_verification_s"]
        refused = httpx2.get(f"{url}/v1/admin/counts", headers={"Authorization": "Bearer x"})
        assert refused.status_code == 401
        listed = admin.get("/v1/requests", state="CANCELLED")["requests"]
        assert [r["request_id"] for r in listed] == [b.request_id]


def test_podium_server_listens_and_the_admin_commands_answer(
    tmp_path: Path,
    roster: Path,
    hub: Any,
    key_file: Path,
    bundles: dict[str, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The command itself: `podium server` prints where it listens; `podium competition`
    reads it with the admin token."""
    import json
    import os
    import subprocess
    import sys

    from conftest import REPO

    from podium.cli.app import main

    cmd = [
        sys.executable, "-c", "from podium.cli.app import main; main()", "server",
        "--db", f"sqlite:///{tmp_path / 'c.db'}", "--roster", str(roster), "--challenge", "tiny",
        "--store", str(tmp_path / "board"), "--key", str(key_file), "--port", "0",
        "--admin-token", ADMIN, "--worker-token", WORKER, "--json",
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert server.stdout is not None
        url = json.loads(server.stdout.readline())["url"]
        assert httpx2.get(f"{url}/healthz").json()["challenge"] == "tiny"
        alice = DoorClient(url, "tok-alice")
        alice.submit(bundles["acme"])  # read by the server's intake processes
        with pytest.raises(BundleError) as refused:
            alice.submit(bundles["truncated"])
        assert refused.value.finding_id == "bundle.corrupt"
        assert "podium-door-" not in str(refused.value)  # no server path

        def admin(*args: str) -> Any:
            with pytest.raises(SystemExit) as done:
                main(["competition", *args, "--server", url, "--admin-token", ADMIN, "--json"])
            assert done.value.code in (0, None)
            return json.loads(capsys.readouterr().out)

        assert admin("counts")["counts"][rq.PENDING] == 1
        (listed,) = admin("list", "--team", "acme")["requests"]
        assert listed["submitted_by"] == "alice"
        assert admin("cancel", listed["request_id"][:10])["request"]["state"] == rq.CANCELLED
        assert admin("eta")["eta_s"] == 0
        (token,) = admin("workers")["tokens"]
        assert admin("revoke-worker", token["name"])["released"] == []
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_worker_for_another_challenge_is_refused_and_the_database_claims_by_challenge(
    opener: OpenDoor, bundles: dict[str, Path]
) -> None:
    door = opener(publish=False)
    req, _ = door.submit(Participant("alice", "acme"), bundles["acme"])
    assert door.db.claim("w-x/gpu", 600, challenge="fast-gemma") is None
    with serving(door) as url:
        worker = ServerQueue(url, WORKER, worker="gpu")
        with pytest.raises(WrongChallenge) as err:
            worker.claim("gpu", 600, challenge="fast-gemma")
        assert "runs challenge 'tiny'" in str(err.value)
        assert door.db.get(req.request_id).state == rq.PENDING  # nothing taken
        got = worker.claim("gpu", 600, challenge="tiny")
        assert got is not None and got[0].request_id == req.request_id
    door.db.close()
