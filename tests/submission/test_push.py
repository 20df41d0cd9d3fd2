"""push fails clearly without a token or a reachable Hub, and never touches the bundle."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Callable
from pathlib import Path

import huggingface_hub.constants
import pytest

from podium.errors import HubError
from submission.bundle import package
from submission.push import push_bundle

# the bundle's base is pinned from the local image: every door refuses an unchecked one
pytestmark = pytest.mark.docker


@pytest.fixture
def bundle(make_submission: Callable[..., Path], tmp_path: Path) -> Path:
    result = package(make_submission(), tmp_path / "out", build=False)
    assert result.bundle is not None
    return result.bundle.path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_missing_token_says_how_to_log_in(bundle: Path) -> None:
    before = _digest(bundle)
    with pytest.raises(HubError) as caught:
        push_bundle(bundle, "acme/entries", endpoint=f"http://127.0.0.1:{_closed_port()}")
    assert "token" in caught.value.message
    assert caught.value.hint is not None and "hf auth login" in caught.value.hint
    assert "HF_TOKEN" in caught.value.hint
    assert _digest(bundle) == before
    assert not bundle.with_name(bundle.name + ".push.json").exists()


def test_unreachable_hub_is_a_clear_error(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the library reads HF_HUB_OFFLINE at import time; the test isolation turns it on
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_real")
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    before = _digest(bundle)
    with pytest.raises(HubError) as caught:
        push_bundle(bundle, "acme/entries", repo_type="dataset")
    assert "cannot reach the Hub" in caught.value.message
    assert endpoint in caught.value.message
    assert _digest(bundle) == before
    assert not bundle.with_name(bundle.name + ".push.json").exists()


def test_a_stale_sha256_file_is_refused(bundle: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from podium.errors import UsageError

    monkeypatch.setenv("HF_TOKEN", "hf_test_token_not_real")
    bundle.with_name("acme-e1.sha256").write_text("0" * 64 + "  acme-e1.tar.gz\n")
    with pytest.raises(UsageError):
        push_bundle(bundle, "acme/entries")
