"""A whole dispatch rehearsed on this machine with the ``local`` jobs backend.

A queued sample bundle is rebuilt without cache, its engine runs in a server job and
podium's harness in a harness job, both containers on one internal Docker network (no
route anywhere else) where the harness reaches the engine by its alias. The harness job
holds the held-out set (a read-only volume) and the signing key (a secret); its signed
report comes back through its log, is checked and published, and the request FINISHES.
Verdict: UNOFFICIAL, since the hf-jobs runner cannot attest egress isolation.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from leaderboard.stores.local import LocalStore
from podium.signing import KeyPair
from verifier.scale.dispatch.dispatcher import DispatchConfig, Dispatcher
from verifier.scale.dispatch.jobs import VolumeSpec
from verifier.scale.queue import request as rq
from verifier.scale.queue.stores import LocalQueue, describe_bundle

pytestmark = [pytest.mark.docker, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[3]
TINY = REPO / "podium" / "data" / "tiny"


def need_tiny_and_docker() -> None:
    reasons = []
    if not (TINY / "MANIFEST.json").is_file():
        reasons.append("the shipped tiny model is not built (podium/data/tiny/MANIFEST.json)")
    try:
        import docker

        docker.from_env().ping()
    except Exception:
        reasons.append("no Docker engine")
    if reasons:
        if os.environ.get("PODIUM_REQUIRE_DOCKER") == "1":
            pytest.fail("; ".join(reasons))
        pytest.skip("; ".join(reasons))


def test_local_dispatch_rehearsal_verifies_a_queued_bundle(
    tmp_path: Path, sample_bundle: Path, keypair: KeyPair
) -> None:
    need_tiny_and_docker()
    from verifier.scale.dispatch.harness_image import build_harness_image
    from verifier.scale.dispatch.local import LocalJobs

    heldout = tmp_path / "heldout"
    heldout.mkdir()
    shutil.copy(TINY / "heldout-prompts.jsonl", heldout / "prompts.jsonl")
    shutil.copy(TINY / "ppl-heldout.jsonl", heldout / "ppl.jsonl")
    queue = LocalQueue(tmp_path / "queue")
    (req,) = queue.submit([describe_bundle(sample_bundle)])
    backend = LocalJobs()
    cfg = DispatchConfig(
        hold=None,  # no hold here: test_publication_hold.py tests it
        queue=queue,
        backend=backend,
        key=keypair,
        out_dir=tmp_path / "out",
        queue_volume=VolumeSpec("local", str(queue.root), "/queue"),
        store=LocalStore(tmp_path / "results"),
        heldout=VolumeSpec("local", str(heldout), "/heldout"),
        flavor="cpu-basic",
        harness_image=build_harness_image(),
        max_concurrent=1,
        lease_s=120,
        poll_s=1,
        job_timeout_s=600,
    )
    lines: list[str] = []
    handled = Dispatcher(cfg, say=lines.append).run(once=True)
    (done,) = queue.list_requests()
    res = done.doc["result"]
    assert [h.state for h in handled] == ["FINISHED"], (lines, res)
    assert done.state == rq.FINISHED
    report = json.loads(
        (tmp_path / "out" / req.request_id / "attempt-1" / "report.json").read_text()
    )
    assert report["runner"] == "hf-jobs" and report["failure"] is None
    checks = {c["id"]: c["status"] for c in report["checks"]}
    # UNOFFICIAL: every check passes, but the hf-jobs runner cannot attest isolation
    failing = {c["id"]: c for c in report["checks"] if c["status"] not in ("pass", "skip")}
    assert res["verdict"] == report["verdict"] == "UNOFFICIAL", (failing, report["findings"])
    assert failing == {}
    assert checks["ppl.cap"] == "pass" and checks["integrity.reference-decode"] == "pass"
    assert checks["integrity.isolation"] == "skip"
    # and the sample entry reports no TPS, so there is nothing to reproduce
    assert req.doc["reported_tps"] is None
    skipped = sorted(k for k, v in checks.items() if v == "skip")
    assert skipped == ["integrity.isolation", "tps.reproduction"]
    assert report["metrics"]["tps"]["median"] > 0
    assert report["heldout"]["public"] is False
    (record,) = LocalStore(tmp_path / "results").list_records()
    assert record["record_id"] in res["record_ids"]
    harness_log = Path(res["logs"]["harness"]).read_text()
    assert "PODIUM-REPORT 1/" in harness_log
    # both jobs were removed with their network once the logs were kept
    assert backend.find({"podium.request": req.request_id}) == []
