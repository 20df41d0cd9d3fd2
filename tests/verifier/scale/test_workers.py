"""Workers drain a queue exactly once, and a killed worker loses nothing.

Four workers take twenty requests from one queue (a local folder, then a Hub dataset
through the real client) and verify with the real worker loop around a quick verify
function (real intake, a real signed report, no engine): each request is verified once
and twenty records are published. A worker killed mid-verification leaves its request
RUNNING; once the lease expires another worker finishes it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

from doubles.sandbox import VerifyingSandbox
from hubserver import FakeHub
from quickverify import quick_verify

from leaderboard.stores.hub import HubStore
from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair
from verifier.scale.queue import request as rq
from verifier.scale.queue.stores import LocalQueue, QueueStore, describe_bundle
from verifier.scale.queue.stores.hub import HubQueue
from verifier.scale.worker import Worker, WorkerConfig

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def ledger_lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def drain(queue: QueueStore, store: object, keypair: KeyPair, tmp: Path, n: int) -> list[Worker]:
    ledger = tmp / "ledger.jsonl"
    workers = [
        Worker(
            WorkerConfig(
                hold=None,  # no hold here: test_publication_hold.py tests it
                queue=queue,
                store=store,
                key=keypair,
                runner=VerifyingSandbox,
                out_dir=tmp / "out",
                worker_id=f"w{i}",
                lease_s=60,
                poll_s=0.1,
                verify_fn=partial(quick_verify, ledger=ledger),
            )
        )
        for i in range(n)
    ]
    threads = [threading.Thread(target=w.run) for w in workers]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if sum(len(w.handled) for w in workers) >= 20:
            break
        time.sleep(0.2)
    for w in workers:
        w.stop()
    for t in threads:
        t.join(timeout=60)
    return workers


def check_exactly_once(queue: QueueStore, store: object, tmp: Path, workers: list[Worker]) -> None:
    reqs = queue.list_requests()
    assert len(reqs) == 20
    assert {r.state for r in reqs} == {rq.FINISHED}, [r.summary() for r in reqs]
    ledger = ledger_lines(tmp / "ledger.jsonl")
    assert len(ledger) == 20  # verified once each
    assert len({x["reported_tps"] for x in ledger}) == 20
    records = store.list_records()  # type: ignore[attr-defined]
    assert len(records) == 20
    ids = [rid for r in reqs for rid in r.doc["result"]["record_ids"]]
    assert sorted(ids) == sorted(rec["record_id"] for rec in records)
    assert sum(len(w.handled) for w in workers) == 20
    assert sum(1 for w in workers if w.handled) >= 2  # the work was really shared


def submit_twenty(queue: QueueStore, bundle: Path) -> None:
    queue.submit([describe_bundle(bundle, reported_tps=100.0 + i) for i in range(20)])


def test_four_workers_drain_a_local_queue_exactly_once(
    tmp_path: Path, sample_bundle: Path, keypair: KeyPair
) -> None:
    queue = LocalQueue(tmp_path / "queue")
    store = LocalStore(tmp_path / "results")
    submit_twenty(queue, sample_bundle)
    workers = drain(queue, store, keypair, tmp_path, 4)
    check_exactly_once(queue, store, tmp_path, workers)


def test_four_workers_drain_a_hub_queue_exactly_once(
    tmp_path: Path, sample_bundle: Path, keypair: KeyPair, fake_hub: FakeHub
) -> None:
    queue = HubQueue("org/queue", endpoint=fake_hub.endpoint, cache_dir=tmp_path / "c1")
    store = HubStore("org/results", endpoint=fake_hub.endpoint, cache_dir=tmp_path / "c2")
    submit_twenty(queue, sample_bundle)
    workers = drain(queue, store, keypair, tmp_path, 4)
    check_exactly_once(queue, store, tmp_path, workers)
    # the queue and the results live in separate repos
    assert not any(p.startswith("records/") for p in fake_hub.files("org/queue"))
    assert not any(p.startswith("requests/") for p in fake_hub.files("org/results"))


def spawn_worker(tmp: Path, key_file: Path, *, lease: float, delay: float) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(HERE), str(HERE.parents[1])]),
    }
    args = [str(tmp / "queue"), str(tmp / "results"), str(key_file), str(tmp / "ledger.jsonl")]
    args += [str(tmp / "out"), str(lease), str(delay)]
    return subprocess.Popen(
        [sys.executable, str(HERE / "quickverify.py"), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_running(queue: QueueStore, proc: subprocess.Popen[str]) -> rq.QueueRequest:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        running = queue.list_requests(rq.RUNNING)
        if running:
            return running[0]
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.1)
    raise AssertionError("the worker never claimed the request")


def test_a_killed_worker_loses_nothing(
    tmp_path: Path, sample_bundle: Path, keypair: KeyPair, key_file: Path
) -> None:
    queue = LocalQueue(tmp_path / "queue")
    store = LocalStore(tmp_path / "results")
    queue.submit([describe_bundle(sample_bundle)])
    proc = spawn_worker(tmp_path, key_file, lease=2.0, delay=60.0)
    try:
        held = wait_running(queue, proc)
        victim = (held.claim or {})["worker"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    ledger = tmp_path / "ledger.jsonl"
    rescuer = Worker(
        WorkerConfig(
            hold=None,  # no hold here: test_publication_hold.py tests it
            queue=queue,
            store=store,
            key=keypair,
            runner=VerifyingSandbox,
            out_dir=tmp_path / "out2",
            worker_id="rescuer",
            lease_s=30,
            verify_fn=partial(quick_verify, ledger=ledger),
        )
    )
    assert rescuer.run(once=True) == []  # still held: the lease has not expired yet
    time.sleep(2.2)
    (handled,) = rescuer.run(once=True)
    assert handled.state == "FINISHED"
    (req,) = queue.list_requests()
    assert req.state == rq.FINISHED and req.doc["attempts"] == 2
    notes = [h.get("note", "") for h in req.doc["history"]]
    assert any(f"lease of {victim} expired" in n for n in notes)
    assert len(ledger_lines(ledger)) == 1 and len(store.list_records()) == 1


def test_a_signal_lets_the_worker_finish_its_request_then_stop(
    tmp_path: Path, sample_bundle: Path, key_file: Path
) -> None:
    queue = LocalQueue(tmp_path / "queue")
    queue.submit([describe_bundle(sample_bundle, reported_tps=float(i + 1)) for i in range(2)])
    proc = spawn_worker(tmp_path, key_file, lease=30.0, delay=1.5)
    try:
        wait_running(queue, proc)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out
    states = sorted(r.state for r in queue.list_requests())
    assert states == [rq.FINISHED, rq.PENDING], out  # finished one, claimed no other
    assert "finishing the current request" in out
