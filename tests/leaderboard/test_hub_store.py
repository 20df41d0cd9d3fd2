"""The Hub dataset store, driven through the real huggingface_hub client against a
local fake Hub speaking the same HTTP endpoints."""

from __future__ import annotations

import multiprocessing

import pytest
from factories import make_record, publish_worker, seeded_records, trusting
from hubserver import FakeHub, allow_hub_requests
from huggingface_hub import constants

from leaderboard.checked import check_store
from leaderboard.log import parse_head
from leaderboard.publish import head_signer
from leaderboard.stores import open_store
from leaderboard.stores.hub import HubStore
from podium.errors import HubError
from podium.signing import KeyPair

REPO = "podium-org/leaderboard"


def hub_store(hub: FakeHub, **kwargs) -> HubStore:
    kwargs.setdefault("base_delay", 0.01)
    return HubStore(REPO, endpoint=hub.endpoint, **kwargs)


def test_publish_is_one_inline_commit_and_idempotent(fake_hub: FakeHub, keypair: KeyPair) -> None:
    store = hub_store(fake_hub)
    recs = seeded_records(keypair)
    first = store.publish(recs, head_signer(keypair))
    assert sorted(first.added) == sorted(r["record_id"] for r in recs)
    second = store.publish(recs, head_signer(keypair))
    assert second.added == [] and len(second.already_present) == len(recs)
    history = fake_hub.history(REPO)
    assert [c.message for c in history] == ["Add 7 leaderboard record(s)", "initial commit"]
    files = fake_hub.files(REPO)
    assert sum(p.startswith("records/tiny/") for p in files) == 7 and "README.md" in files
    # small JSON files travel inline in the commit (base64), never through LFS or xet
    # 7 rows, the card and the signed head, all inline
    assert fake_hub.stats["commit-file:inline"] == 9 and fake_hub.stats["commit-file:lfs"] == 0
    assert "log/head.json" in files


def test_reading_back_records_keys_and_one_row(fake_hub: FakeHub, keypair: KeyPair) -> None:
    fake_hub.page_size = 3  # force the client through several tree pages
    store = hub_store(fake_hub)
    recs = seeded_records(keypair)
    store.publish(recs, head_signer(keypair))
    assert store.publish_key(keypair.public_pem()) == keypair.key_id
    assert store.publish_key(keypair.public_pem()) == keypair.key_id
    by_id = {r["record_id"]: r for r in store.list_records()}
    assert by_id == {r["record_id"]: r for r in recs}
    assert list(store.public_keys()) == [keypair.key_id]
    assert store.get(recs[2]["record_id"]) == recs[2]
    assert store.get("f" * 32) is None
    assert len(check_store(store, trusting(keypair)).good) == 7
    assert keypair.key_id in fake_hub.files(REPO)["README.md"].decode()


@pytest.mark.parametrize("status", [409, 412, 429, 500, 503])
def test_commit_conflicts_and_limits_are_retried(
    fake_hub: FakeHub, keypair: KeyPair, status: int
) -> None:
    store = hub_store(fake_hub)
    store.publish([make_record(keypair, serial=1)], head_signer(keypair))
    fake_hub.inject(status, 3, endpoint="commit", retry_after=0.02 if status == 429 else None)
    result = store.publish([make_record(keypair, serial=2)], head_signer(keypair))
    assert len(result.added) == 1
    assert fake_hub.stats[f"injected:commit:{status}"] == 3
    assert len(fake_hub.history(REPO)) == 3


def test_persistent_rate_limit_becomes_a_hub_error_with_a_hint(
    fake_hub: FakeHub, keypair: KeyPair
) -> None:
    store = hub_store(fake_hub, max_attempts=3)
    store.publish([make_record(keypair, serial=1)], head_signer(keypair))
    fake_hub.inject(429, 10, endpoint="commit")
    with pytest.raises(HubError) as info:
        store.publish([make_record(keypair, serial=2)], head_signer(keypair))
    assert "rate limited" in info.value.message and "after 3 attempts" in info.value.message
    assert info.value.hint and "per call" in info.value.hint


def test_bad_token_and_offline_mode_are_explained(
    keypair: KeyPair, monkeypatch: pytest.MonkeyPatch
) -> None:
    allow_hub_requests(monkeypatch)
    with FakeHub(token="hf_right") as hub:
        with pytest.raises(HubError) as info:
            hub_store(hub, token="hf_wrong").publish([make_record(keypair)], head_signer(keypair))
        assert "HF_TOKEN" in (info.value.hint or "")
        assert (
            hub_store(hub, token="hf_right")
            .publish([make_record(keypair)], head_signer(keypair))
            .added
        )
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        with pytest.raises(HubError) as info:
            hub_store(hub, token="hf_right").list_records()
        assert "HF_HUB_OFFLINE" in (info.value.hint or "")


def test_missing_repo_is_a_hub_error(fake_hub: FakeHub) -> None:
    with pytest.raises(HubError, match="does not exist"):
        hub_store(fake_hub).list_records()


def test_store_url_selects_the_hub(fake_hub: FakeHub, keypair: KeyPair) -> None:
    store = open_store(f"hf://datasets/{REPO}?endpoint={fake_hub.endpoint}")
    assert isinstance(store, HubStore) and store.repo_id == REPO
    assert store.url == f"hf://datasets/{REPO}"
    store.publish([make_record(keypair)], head_signer(keypair))
    assert len(open_store(f"hf://datasets/{REPO}?endpoint={fake_hub.endpoint}").list_records()) == 1


@pytest.mark.slow
def test_eight_processes_publishing_to_the_hub_lose_nothing(
    fake_hub: FakeHub, keypair: KeyPair
) -> None:
    url = f"hf://datasets/{REPO}?endpoint={fake_hub.endpoint}"
    fake_hub.inject(412, 12, endpoint="commit")
    fake_hub.inject(409, 12, endpoint="commit")
    fake_hub.inject(429, 6, endpoint="commit", retry_after=0.05)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(8) as pool:
        results = pool.map(
            publish_worker, [(url, keypair.private_pem(), w, 50, 5) for w in range(8)]
        )
    assert results == [(50, 5)] * 8
    files = fake_hub.files(REPO)
    assert sum(p.startswith("records/") for p in files) == 400
    for status in (412, 409, 429):
        assert fake_hub.stats[f"injected:commit:{status}"] > 0
    check = check_store(open_store(url), trusting(keypair))
    assert check.ok and len(check.good) == 400
    head = parse_head(files["log/head.json"])
    assert head.version == 8 * 50 // 5  # one head per publish call that added rows
    assert sorted(leaf["path"] for leaf in head.leaves) == sorted(
        p for p in files if p.startswith("records/")
    )
