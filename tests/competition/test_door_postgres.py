"""The door on PostgreSQL, started by the suite: exactly once with a worker killed
mid-verification, and the database going down with nothing half-written.

The worker that is killed is a process of its own (``serverworker.py``) holding a short
lease; three workers in this process then drain the queue. Every request must end
FINISHED, verified once by a worker that lived (the ledger counts each verification that
completed), and published once.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from conftest import ADMIN, REPO, WORKER, serving
from doubles.sandbox import VerifyingSandbox

from competition.app import open_door
from competition.client import DoorClient, ServerQueue
from competition.db import bundles_t, charges_t, requests_t
from competition.errors import DatabaseUnavailable
from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair
from verifier.scale.queue import request as rq
from verifier.scale.worker import Worker, WorkerConfig

sys.path.insert(0, str(REPO / "tests" / "verifier" / "scale"))
from quickverify import quick_verify

pytestmark = pytest.mark.slow
HERE = Path(__file__).resolve().parent


def _wait_for(proc: subprocess.Popen[str], text: str, timeout: float) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.strip())
        if text in line:
            return seen
    raise AssertionError(f"no {text!r} from the worker: {seen}")


def test_exactly_once_on_postgres_with_a_worker_killed_mid_verification(
    pg_url: str,
    roster: Path,
    hub: Any,
    keypair: KeyPair,
    key_file: Path,
    bundles: dict[str, Path],
    tmp_path: Path,
) -> None:
    door = open_door(
        db=pg_url,
        roster=roster,
        challenge="tiny",
        admin_token=ADMIN,
        worker_tokens=[WORKER],
        store=str(tmp_path / "board"),
        key=keypair,
    )
    ledger = tmp_path / "ledger"
    with serving(door) as url:
        ids = [
            DoorClient(url, token).submit(bundles[name])["request"]["request_id"]
            for name, token in [
                ("acme", "tok-alice"),
                ("acme2", "tok-alice"),
                ("acme3", "tok-alice"),
                ("rival", "tok-bob"),
            ]
        ]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")])}
        doomed = subprocess.Popen(
            [sys.executable, str(HERE / "serverworker.py"), url, WORKER, str(key_file),
             str(ledger), str(tmp_path / "doomed"), "3", "600"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
        )  # fmt: skip
        try:
            _wait_for(doomed, "claimed", timeout=120)
        finally:
            doomed.send_signal(signal.SIGKILL)
            doomed.wait(timeout=30)
        (held,) = door.db.select(state=rq.RUNNING)
        time.sleep(3.5)  # the killed worker's lease runs out

        def drain(n: int) -> None:
            worker = Worker(
                WorkerConfig(
                    queue=ServerQueue(url, WORKER, worker=f"live-{n}"),
                    key=keypair,
                    runner=VerifyingSandbox,
                    out_dir=tmp_path / f"live-{n}",
                    lease_s=60,
                    poll_s=0.1,
                    worker_id=f"live-{n}",
                    verify_fn=partial(quick_verify, ledger=ledger),
                )
            )
            worker.loop.run(worker.work_one, until_empty=True)

        threads = [threading.Thread(target=drain, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)

    done = {r.request_id: r for r in door.db.select()}
    assert sorted(done) == sorted(ids)
    assert {r.state for r in done.values()} == {rq.FINISHED}
    taken = done[held.request_id]
    assert taken.doc["attempts"] == 2
    assert any("taken over" in h.get("note", "") for h in taken.doc["history"])
    assert len(ledger.read_text().splitlines()) == len(ids)  # none verified twice
    records = LocalStore(tmp_path / "board").list_records()
    assert sorted(r["bundle_sha256"] for r in records) == sorted(
        r.bundle_sha256 for r in done.values()
    )
    door.db.close()


def test_the_database_down_answers_503_and_writes_nothing(
    pg_cluster: Any, pg_url: str, roster: Path, hub: Any, bundles: dict[str, Path]
) -> None:
    door = open_door(
        db=pg_url, roster=roster, challenge="tiny", admin_token=ADMIN, worker_tokens=[WORKER]
    )
    with serving(door) as url:
        alice = DoorClient(url, "tok-alice")
        alice.submit(bundles["acme"])
        pg_cluster.stop()
        try:
            with pytest.raises(DatabaseUnavailable) as down:
                alice.submit(bundles["acme2"])
            assert "try again" in (down.value.hint or "")
        finally:
            pg_cluster.start()
        assert alice.submit(bundles["acme"])["charged"] is False  # kept across the outage
    with door.db.tx() as conn:
        count = [
            conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
            for t in (requests_t, bundles_t, charges_t)
        ]
    assert count == [1, 1, 1]
    door.db.close()
