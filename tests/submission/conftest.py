"""Fixtures for the participant side: a small challenge and fresh submission directories."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from schemas.challenge import ChallengeSpec, load_challenge
from submission.scaffold import init_submission

FAKE_DIGEST = "sha256:" + "ab" * 32


@pytest.fixture
def tiny() -> ChallengeSpec:
    return load_challenge("tiny")


@pytest.fixture
def small_limits(tiny: ChallengeSpec) -> ChallengeSpec:
    """The tiny challenge with bundle caps small enough to hit in a test."""
    limits = dataclasses.replace(
        tiny.limits, bundle_bytes=256 * 1024, bundle_files=50, unpacked_bytes=1024 * 1024
    )
    return dataclasses.replace(tiny, limits=limits)


@pytest.fixture
def make_submission(tmp_path: Path) -> Callable[..., Path]:
    def make(kind: str = "baseline", challenge: str = "tiny", name: str = "sub") -> Path:
        directory = tmp_path / name
        init_submission(directory, load_challenge(challenge), kind=kind, team="acme", entry="e1")
        return directory

    return make
