"""One bundle through the door and the real pipeline: the submitter's status says VERIFIED.

The worker claims over HTTP and verifies with ``verify`` itself in ``VerifyingSandbox``
(podium's process runner posing as a sandbox, so no Docker is needed), on the tiny
challenge with its stability bound lifted as ``tests/verifier/test_pipeline.py`` lifts it:
this test judges the door, not the machine's noise.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from conftest import ADMIN, WORKER, serving
from doubles.sandbox import VerifyingSandbox

from competition.app import open_door
from competition.client import DoorClient, ServerQueue
from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair
from schemas.challenge import ChallengeSpec, load_challenge
from verifier.runners.reference_engine import reference_runner
from verifier.scale.worker import Worker, WorkerConfig

pytestmark = pytest.mark.slow


def tiny(_name: str) -> ChallengeSpec:
    spec = load_challenge("tiny")
    return dataclasses.replace(spec, tps=dataclasses.replace(spec.tps, max_cv=100.0))


def test_a_worker_verifies_over_http_and_the_submitter_sees_verified(
    tmp_path: Path, roster: Path, hub: Any, keypair: KeyPair, bundles: dict[str, Path]
) -> None:
    door = open_door(
        db=f"sqlite:///{tmp_path / 'c.db'}",
        roster=roster,
        challenge="tiny",
        admin_token=ADMIN,
        worker_tokens=[WORKER],
        store=str(tmp_path / "board"),
        key=keypair,
    )
    with serving(door) as url:
        carol = DoorClient(url, "tok-carol")
        rid = carol.submit(bundles["rival"])["request"]["request_id"]
        worker = Worker(
            WorkerConfig(
                hold=None,  # no hold here: test_publication_hold.py tests it
                queue=ServerQueue(url, WORKER, worker="gpu-1"),
                key=keypair,
                runner=VerifyingSandbox,
                out_dir=tmp_path / "work",
                reference=reference_runner,
                lease_s=120,
                spec_for=tiny,
            )
        )
        (handled,) = worker.run(once=True)
        seen = carol.status(rid)["request"]
        assert handled.state == "FINISHED", handled
        assert seen["state"] == "FINISHED" and seen["verdict"] == "VERIFIED", seen
        assert seen["report"]["verdict"] == "VERIFIED" and seen["published"]
    (record,) = LocalStore(tmp_path / "board").list_records()
    assert record["verdict"] == "VERIFIED" and record["record_id"] in seen["record_ids"]
    assert record["submitter"] == {"team": "rival", "user": "carol"}
