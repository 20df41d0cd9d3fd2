"""Fixtures for leaderboard tests: an organizer key, seeded stores and a fake Hub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from factories import seeded_records
from hubserver import FakeHub, allow_hub_requests
from tamper import Hub, Local

from leaderboard.publish import head_signer
from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair, write_keypair


@pytest.fixture(scope="session")
def keypair() -> KeyPair:
    return KeyPair.generate()


@pytest.fixture
def key_files(tmp_path: Path, keypair: KeyPair) -> tuple[Path, Path]:
    """(private key file, public key file) of ``keypair``."""
    private = tmp_path / "keys" / "organizer.pem"
    public = write_keypair(keypair, private)
    return private, public


@pytest.fixture
def seeded_store(tmp_path: Path, keypair: KeyPair) -> LocalStore:
    store = LocalStore(tmp_path / "store")
    store.publish_key(keypair.public_pem())
    store.publish(seeded_records(keypair), head_signer(keypair))
    return store


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    allow_hub_requests(monkeypatch)
    with FakeHub(page_size=50) as hub:
        yield hub


@pytest.fixture(params=["local", "hub"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Local | Hub]:
    if request.param == "local":
        yield Local(tmp_path / "store")
    else:
        yield Hub(request.getfixturevalue("fake_hub"))
