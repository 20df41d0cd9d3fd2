"""The one claim loop under the worker and the dispatcher: how many it takes, where it runs."""

from __future__ import annotations

import threading
from pathlib import Path

from verifier.scale.queue import request as rq
from verifier.scale.queue.lease import LeaseKeeper
from verifier.scale.queue.loop import ClaimLoop, Handled, conclude_failed
from verifier.scale.queue.request import Claim, QueueRequest
from verifier.scale.queue.stores import LocalQueue, describe_bundle


def queue_of(tmp_path: Path, bundle: Path, n: int) -> LocalQueue:
    queue = LocalQueue(tmp_path / "queue")
    queue.submit([describe_bundle(bundle, reported_tps=100.0 + i) for i in range(n)])
    return queue


def test_a_limit_of_one_takes_one_request_and_leaves_the_rest_pending(
    tmp_path: Path, sample_bundle: Path
) -> None:
    queue = queue_of(tmp_path, sample_bundle, 3)
    threads: list[threading.Thread] = []

    def handle(keeper: LeaseKeeper, req: QueueRequest, claim: Claim) -> Handled:
        threads.append(threading.current_thread())
        return conclude_failed(queue, keeper, req.request_id, "handled", lambda _: None)

    loop = ClaimLoop(queue, who="w", lease_s=60, poll_s=0.05)
    (handled,) = loop.run(handle, limit=1, until_empty=True)
    assert handled.state == "FAILED"
    assert sorted(r.state for r in queue.list_requests()) == [rq.FAILED, rq.PENDING, rq.PENDING]
    assert threads == [threading.main_thread()], "one at a time runs in the calling thread"


def test_until_empty_with_three_in_flight_drains_the_queue_concurrently(
    tmp_path: Path, sample_bundle: Path
) -> None:
    queue = queue_of(tmp_path, sample_bundle, 5)
    together = threading.Barrier(3, timeout=20)
    first_three: list[str] = []

    def handle(keeper: LeaseKeeper, req: QueueRequest, claim: Claim) -> Handled:
        if len(first_three) < 3:
            first_three.append(req.request_id)
            together.wait()  # passes only when three handlers run at the same time
        return conclude_failed(queue, keeper, req.request_id, "handled", lambda _: None)

    loop = ClaimLoop(queue, who="d", lease_s=60, poll_s=0.05, max_concurrent=3)
    handled = loop.run(handle, until_empty=True)
    assert len(handled) == 5 and {h.state for h in handled} == {"FAILED"}
    assert {r.state for r in queue.list_requests()} == {rq.FAILED}
    assert not together.broken


def test_a_loop_for_another_challenge_takes_nothing_and_leaves_every_request(
    tmp_path: Path, sample_bundle: Path
) -> None:
    queue = queue_of(tmp_path, sample_bundle, 2)  # both for tiny

    def handle(keeper: LeaseKeeper, req: QueueRequest, claim: Claim) -> Handled:
        raise AssertionError(f"claimed {req.doc['challenge']}")

    loop = ClaimLoop(queue, who="gpu", lease_s=60, poll_s=0.05, challenge="fast-gemma")
    assert loop.run(handle, until_empty=True) == []
    assert [r.state for r in queue.list_requests()] == [rq.PENDING, rq.PENDING]
    mine = ClaimLoop(queue, who="cpu", lease_s=60, poll_s=0.05, challenge="tiny")
    mine.run(lambda k, r, c: conclude_failed(queue, k, r.request_id, "ok", lambda _: None), limit=1)
    assert sorted(r.state for r in queue.list_requests()) == [rq.FAILED, rq.PENDING]
