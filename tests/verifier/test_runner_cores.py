"""The engine's container is held to the cores the verifier itself was given."""

from __future__ import annotations

import os

import pytest

from verifier.runners import local_docker


def test_a_verifier_given_some_cores_holds_the_engine_to_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {6, 4, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert local_docker.own_cores() == "4,5,6"


def test_a_verifier_on_every_core_leaves_the_engine_unpinned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    assert local_docker.own_cores() is None


def test_without_affinity_the_engine_is_unpinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert local_docker.own_cores() is None
