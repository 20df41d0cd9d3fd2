"""Both queue stores (local folder, Hub dataset through the real client) keep the same
contract: idempotent submit, one claim per request, leases that expire, fenced marks."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hubserver import FakeHub

from podium.errors import UsageError
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import LeaseLost
from verifier.scale.queue.stores import LocalQueue, QueueStore, describe_bundle, open_queue
from verifier.scale.queue.stores.hub import HubQueue

MakeQueue = Callable[[], QueueStore]


@pytest.fixture(params=["local", "hub"])
def make_queue(request: pytest.FixtureRequest, tmp_path: Path) -> MakeQueue:
    if request.param == "local":
        return lambda: LocalQueue(tmp_path / "queue")
    hub: FakeHub = request.getfixturevalue("fake_hub")
    return lambda: HubQueue("org/queue", endpoint=hub.endpoint, cache_dir=tmp_path / "cache")


def test_submit_is_idempotent_and_stores_the_bundle(
    make_queue: MakeQueue, sample_bundle: Path, tmp_path: Path
) -> None:
    queue = make_queue()
    first = queue.submit([describe_bundle(sample_bundle, reported_tps=12.5)])
    again = queue.submit([describe_bundle(sample_bundle, reported_tps=12.5)])
    assert [r.request_id for r in first] == [r.request_id for r in again]
    (req,) = queue.list_requests()
    assert req.state == rq.PENDING and req.doc["reported_tps"] == 12.5
    assert req.doc["team"] == "podium" and req.doc["challenge"] == "tiny"
    assert req.doc["history"][0]["by"] and req.doc["history"][0]["at"]
    fetched = queue.fetch_bundle(req, tmp_path / "fetched")
    assert fetched.read_bytes() == sample_bundle.read_bytes()


def test_one_claim_per_request_and_the_full_story_in_history(
    make_queue: MakeQueue, sample_bundle: Path
) -> None:
    queue = make_queue()
    queue.submit([describe_bundle(sample_bundle)])
    got = queue.claim("w1", lease_s=60)
    assert got is not None
    req, claim = got
    assert req.state == rq.RUNNING and req.claim and req.claim["worker"] == "w1"
    assert queue.claim("w2", lease_s=60) is None  # held
    renewed, lost = queue.renew([claim], lease_s=60)
    assert not lost and renewed[0].lease_until > claim.lease_until
    done = queue.finish(renewed[0], {"verdict": "VERIFIED"})
    assert done.state == rq.FINISHED
    assert [h["state"] for h in done.doc["history"]] == ["PENDING", "RUNNING", "FINISHED"]
    assert [h["by"] for h in done.doc["history"]][1:] == ["w1", "w1"]
    assert [r.state for r in queue.list_requests()] == [rq.FINISHED]
    with pytest.raises(UsageError):
        queue.cancel(done.request_id)  # terminal


def test_an_expired_lease_puts_the_request_back_and_fences_the_old_holder(
    make_queue: MakeQueue, sample_bundle: Path
) -> None:
    queue = make_queue()
    queue.submit([describe_bundle(sample_bundle)])
    got = queue.claim("slow", lease_s=0.5)
    assert got is not None
    _, stale = got
    time.sleep(0.6)
    retaken = queue.claim("fast", lease_s=60)
    assert retaken is not None
    req, fresh = retaken
    assert req.doc["attempts"] == 2 and "expired" in req.doc["history"][-1]["note"]
    _, lost = queue.renew([stale], lease_s=60)
    assert lost == [req.request_id]
    with pytest.raises(LeaseLost):
        queue.finish(stale, {"verdict": "VERIFIED"})
    assert queue.finish(fresh, {"verdict": "VERIFIED"}).state == rq.FINISHED


def test_release_cancel_and_resubmit(make_queue: MakeQueue, sample_bundle: Path) -> None:
    queue = make_queue()
    (req,) = queue.submit([describe_bundle(sample_bundle)])
    got = queue.claim("w1", lease_s=60)
    assert got is not None
    assert queue.release(got[1], "stopping").state == rq.PENDING
    cancelled = queue.cancel(req.request_id[:10], by="organizer")
    assert cancelled.state == rq.CANCELLED and cancelled.doc["history"][-1]["by"] == "organizer"
    assert queue.claim("w1", lease_s=60) is None
    (back,) = queue.submit([describe_bundle(sample_bundle)])
    assert back.state == rq.PENDING and back.request_id == req.request_id


def test_hub_queue_costs_one_commit_per_change(
    fake_hub: FakeHub, sample_bundle: Path, tmp_path: Path
) -> None:
    queue = HubQueue("org/q", endpoint=fake_hub.endpoint, cache_dir=tmp_path / "c")
    queue.submit([describe_bundle(sample_bundle, reported_tps=float(i + 1)) for i in range(3)])
    assert queue.commits_made == 1  # three bundles (one blob) and three requests
    got = queue.claim("w", lease_s=60)
    assert got is not None
    renewed, _ = queue.renew([got[1]], lease_s=60)
    queue.finish(renewed[0], {"verdict": "REJECTED"})
    assert queue.commits_made == 4
    files = fake_hub.files("org/q")
    assert sum(p.startswith("requests/pending/") for p in files) == 2
    assert sum(p.startswith("requests/finished/") for p in files) == 1
    assert fake_hub.stats["commit-file:lfs"] == 1  # the bundle went through LFS


def test_a_stale_claim_commit_is_answered_412_and_retried(
    fake_hub: FakeHub, sample_bundle: Path, tmp_path: Path
) -> None:
    queue = HubQueue("org/q", endpoint=fake_hub.endpoint, cache_dir=tmp_path / "c")
    queue.submit([describe_bundle(sample_bundle)])
    fake_hub.inject(412, 2)
    assert queue.claim("w", lease_s=60) is not None
    assert fake_hub.stats["injected:commit:412"] == 2


def test_open_queue_urls(tmp_path: Path) -> None:
    assert isinstance(open_queue(str(tmp_path / "q")), LocalQueue)
    hub = open_queue("hf://datasets/org/queue?endpoint=http://127.0.0.1:9")
    assert isinstance(hub, HubQueue) and hub.repo.endpoint == "http://127.0.0.1:9"
    assert hub.private is True  # a queue is private unless asked otherwise
    with pytest.raises(UsageError):
        open_queue("hf://models/org/queue")
    with pytest.raises(UsageError, match="main branch"):
        open_queue("hf://datasets/org/queue@dev")


def test_a_claim_for_one_challenge_leaves_the_others_requests(
    make_queue: MakeQueue, sample_bundle: Path
) -> None:
    """A worker started with --challenge claims that challenge's requests only."""
    queue = make_queue()
    tiny = describe_bundle(sample_bundle)
    other = dataclasses.replace(tiny, challenge="fast-gemma", sha256="f" * 64)
    queue.submit([tiny, other])
    got = queue.claim("gpu", lease_s=60, challenge="fast-gemma")
    assert got is not None and got[0].doc["challenge"] == "fast-gemma"
    assert queue.claim("gpu", lease_s=60, challenge="fast-gemma") is None
    left = queue.claim("cpu", lease_s=60)
    assert left is not None and left[0].doc["challenge"] == "tiny"
