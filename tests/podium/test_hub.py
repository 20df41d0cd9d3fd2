"""podium's Hub plumbing: which errors it translates, how it retries, what it leaves alone.

The real ``huggingface_hub`` client talks to the local fake Hub (or to a closed port);
nothing here patches podium's own functions.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from hubserver import FakeHub, allow_hub_requests
from huggingface_hub import constants

from podium.errors import HubError, StoreError, UsageError
from podium.hub import (
    DEFAULT_ENDPOINT,
    HubRepo,
    parse_dataset_url,
    resolve_endpoint,
    with_retries,
)
from podium.signing import KeyPair


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    allow_hub_requests(monkeypatch)
    with FakeHub() as hub:
        yield hub


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def retry(fn, **kw):  # type: ignore[no-untyped-def]
    return with_retries(
        fn, action="test", target="hf://datasets/o/n", max_attempts=3, base_delay=0.001,
        max_delay=0.002, **kw,
    )  # fmt: skip


@pytest.mark.parametrize("error", [ValueError("podium bug"), OSError(5, "podium bug")])
def test_a_bare_value_or_os_error_from_podium_is_not_taken_for_a_hub_error(
    error: Exception,
) -> None:
    calls = []

    def buggy() -> None:
        calls.append(1)
        raise error

    with pytest.raises(type(error), match="podium bug") as info:
        retry(buggy)
    assert not isinstance(info.value, HubError | StoreError)
    assert len(calls) == 1, "a bug is not retried"


def test_an_unreachable_hub_is_retried_then_one_hub_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    allow_hub_requests(monkeypatch)
    repo = HubRepo(
        "org/name",
        "hf://datasets/org/name",
        endpoint=f"http://127.0.0.1:{closed_port()}",
        max_attempts=3,
        base_delay=0.001,
        max_delay=0.002,
    )
    with pytest.raises(HubError, match=r"cannot reach the Hub \(after 3 attempts\)") as info:
        repo.retrying("read the queue head", repo.head)
    assert repo.attempts_made == 3
    assert "HF_ENDPOINT" in (info.value.hint or "")


def test_a_repo_id_the_client_refuses_is_a_store_error_with_a_hint(fake_hub: FakeHub) -> None:
    repo = HubRepo("org/bad name!", "hf://datasets/org/bad name!", endpoint=fake_hub.endpoint)
    with pytest.raises(StoreError) as info:
        repo.retrying("list records", lambda: repo.files(None, revision="main"))
    assert "ORG/NAME" in (info.value.hint or "")
    assert repo.attempts_made == 1, "a refused repo id is not retried"


def test_podium_errors_raised_inside_an_attempt_pass_through() -> None:
    def decide() -> None:
        raise UsageError("a decision, not a Hub answer")

    with pytest.raises(UsageError, match="a decision"):
        retry(decide)


def test_production_leaves_xet_as_the_environment_set_it(
    fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    from leaderboard.stores.hub import HubStore
    from verifier.scale.queue.stores.hub import HubQueue

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", False)
    store = HubStore("org/board", endpoint=fake_hub.endpoint, base_delay=0.01)
    HubQueue("org/queue", endpoint=fake_hub.endpoint).list_requests()
    key = KeyPair.generate()
    assert store.publish_key(key.public_pem()) == key.key_id  # small files: inline, no xet
    assert constants.HF_HUB_DISABLE_XET is False


def test_the_default_endpoint_is_defined_once_and_hf_endpoint_is_read_at_call_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from leaderboard.stores.hub import HubStore
    from verifier.scale.dispatch.hf import HfJobs
    from verifier.scale.queue.stores.hub import HubQueue

    assert resolve_endpoint() == DEFAULT_ENDPOINT == "https://huggingface.co"
    assert HubStore("o/n").repo.endpoint == DEFAULT_ENDPOINT
    assert HubQueue("o/n").repo.endpoint == DEFAULT_ENDPOINT
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9/")
    assert HubStore("o/n").repo.endpoint == "http://127.0.0.1:9"
    assert HubQueue("o/n").repo.endpoint == "http://127.0.0.1:9"
    assert HfJobs(namespace="o").api.endpoint == "http://127.0.0.1:9"
    assert resolve_endpoint("http://x/") == "http://x"


def test_dataset_urls_are_taken_apart_or_refused_with_the_form_to_write() -> None:
    url = parse_dataset_url("hf://datasets/org/name@v2?endpoint=http://h:1&private=1")
    assert (url.repo_id, url.revision, url.endpoint, url.private) == (
        "org/name",
        "v2",
        "http://h:1",
        True,
    )
    plain = parse_dataset_url("hf://datasets/org/name")
    assert (plain.revision, plain.endpoint, plain.private) == (None, None, None)
    for bad in ("hf://models/org/name", "hf://datasets/org", "hf://datasets//name", "x://a/b/c"):
        with pytest.raises(UsageError, match="bad Hub store URL") as info:
            parse_dataset_url(bad)
        assert "hf://datasets/ORG/NAME" in (info.value.hint or "")
