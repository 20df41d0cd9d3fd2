"""The dispatcher on HF Jobs, spoken to by the real ``huggingface_hub`` client.

The fake Hub answers the Jobs routes the dispatcher calls; jobs do not run there, so
the test plays the harness job: when one is created it writes a real signed report
into its log and completes. Image building and pushing cannot happen here and are
replaced at that seam only (a registry reference stands for the pushed image).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hubserver import FakeHub, FakeJob
from quickverify import quick_verify

from leaderboard.stores.local import LocalStore
from podium import dockerx
from podium.signing import KeyPair
from schemas.challenge import load_challenge
from verifier.intake import intake
from verifier.pipeline import VerifyRequest
from verifier.runners.hf_jobs import HfJobsRunner
from verifier.scale.dispatch import jobs as J
from verifier.scale.dispatch.dispatcher import DispatchConfig, Dispatcher
from verifier.scale.dispatch.hf import HfJobs
from verifier.scale.dispatch.jobs import VolumeSpec
from verifier.scale.queue import request as rq
from verifier.scale.queue.stores import describe_bundle
from verifier.scale.queue.stores.hub import HubQueue

PUSHED = "registry.example.org/entries@sha256:" + "a" * 64


class PushedJobs(HfJobs):
    def publish_image(self, image_id: str, name: str) -> str:
        return PUSHED  # the registry cannot exist here


def fake_build(root: Path, manifest: Any, spec: Any, *, tag: str) -> dict[str, Any]:
    return {"id": "sha256:" + "b" * 64, "command": ["python3", "launch.py"]}


def play_harness(hub: FakeHub, bundle: Path, keypair: KeyPair, tmp: Path) -> None:
    """Complete each harness job with a real signed report in its log."""

    def on_job(job: FakeJob) -> None:
        if (job.spec.get("labels") or {}).get(J.LABEL_ROLE) != "harness":
            return

        def finish() -> None:
            time.sleep(0.3)
            req = VerifyRequest(
                bundle=bundle,
                spec=load_challenge("tiny"),
                runner=HfJobsRunner("http://engine:8000"),
                out_dir=tmp / job.id,
                key=keypair,
            )
            outcome = quick_verify(req, ledger=tmp / "ledger.jsonl")
            assert outcome.evidence is not None
            lines = J.report_lines(outcome.report)
            lines += J.report_lines(outcome.evidence, J.EVIDENCE_MARK)
            hub.set_job(job.id, "COMPLETED", ["harness starting", *lines])

        threading.Thread(target=finish, daemon=True).start()

    hub.on_job = on_job


def make_config(hub: FakeHub, tmp: Path, keypair: KeyPair, queue: HubQueue) -> DispatchConfig:
    return DispatchConfig(
        hold=None,  # no hold here: test_publication_hold.py tests it
        queue=queue,
        backend=PushedJobs(namespace="org", endpoint=hub.endpoint, token="hf_x"),
        key=keypair,
        out_dir=tmp / "out",
        queue_volume=VolumeSpec("dataset", "org/queue", "/queue"),
        store=LocalStore(tmp / "results"),
        heldout=VolumeSpec("dataset", "org/heldout", "/heldout"),
        max_concurrent=2,
        lease_s=30,
        poll_s=0.2,
        build=fake_build,
        model_volume=lambda spec: VolumeSpec("model", "org/tiny", "/model", revision="0" * 40),
        drafter_volume=lambda spec: VolumeSpec(
            "model", "org/tiny-drafter", "/drafter", revision="1" * 40
        ),
    )


def test_dispatch_runs_a_server_and_a_harness_job_per_request(
    fake_hub: FakeHub, sample_bundle: Path, keypair: KeyPair, tmp_path: Path
) -> None:
    queue = HubQueue("org/queue", endpoint=fake_hub.endpoint, cache_dir=tmp_path / "c")
    queue.submit([describe_bundle(sample_bundle, reported_tps=float(i + 1)) for i in range(2)])
    play_harness(fake_hub, sample_bundle, keypair, tmp_path)
    handled = Dispatcher(make_config(fake_hub, tmp_path, keypair, queue)).run(once=True)
    assert sorted(h.state for h in handled) == ["FINISHED", "FINISHED"], handled
    assert len(fake_hub.jobs) == 4
    for req in queue.list_requests():
        assert req.state == rq.FINISHED
        res = req.doc["result"]
        server, harness = (
            fake_hub.jobs[res["jobs"]["server"]],
            fake_hub.jobs[res["jobs"]["harness"]],
        )
        s, h = server.spec, harness.spec
        assert s["dockerImage"] == PUSHED and s["flavor"] == "a10g-small"
        assert "secrets" not in s and "HF_TOKEN" not in s["environment"]
        assert s["network"] == {"group": res["jobs"]["network_group"], "aliases": ["engine"]}
        assert s["labels"][J.LABEL_REQUEST] == req.request_id
        served = {v["mountPath"]: v for v in s["volumes"]}
        assert set(served) == {"/model", "/drafter"}
        assert served["/drafter"]["source"] == "org/tiny-drafter" and served["/drafter"]["readOnly"]
        assert s["environment"]["DRAFTER_PATH"] == "/drafter"
        assert h["flavor"] == "cpu-upgrade" and set(h["secrets"]) == {"PODIUM_SIGNING_KEY"}
        assert h["network"]["group"] == s["network"]["group"]
        mounts = {v["mountPath"]: v for v in h["volumes"]}
        assert mounts["/heldout"]["source"] == "org/heldout" and mounts["/heldout"]["readOnly"]
        assert mounts["/queue"]["type"] == "dataset"
        assert server.stage == "CANCELED" and harness.stage == "COMPLETED"
        assert Path(res["logs"]["harness"]).read_text().startswith("harness starting")
        # the organizer's evidence came back beside the dispatcher's copy of the report
        kept = Path(res["logs"]["report"])
        evidence = json.loads((kept.parent / "organizer" / "evidence.json").read_text())
        report = json.loads(kept.read_text())
        assert evidence["report_id"] == res["report_id"] == report["report_id"]
        assert len(res["record_ids"]) == 1
    assert len(LocalStore(tmp_path / "results").list_records()) == 2


def test_a_restarted_dispatcher_adopts_the_jobs_it_launched(
    fake_hub: FakeHub, sample_bundle: Path, keypair: KeyPair, tmp_path: Path
) -> None:
    queue = HubQueue("org/queue", endpoint=fake_hub.endpoint, cache_dir=tmp_path / "c")
    queue.submit([describe_bundle(sample_bundle)])
    cfg = make_config(fake_hub, tmp_path, keypair, queue)
    # a first dispatcher claims and launches, then dies before the harness ends
    got = queue.claim("dead-dispatcher", lease_s=0.5)
    assert got is not None
    req = got[0]
    first = Dispatcher(cfg)
    bundle = queue.fetch_bundle(req, tmp_path / "b")
    opened = intake(bundle, tmp_path / "i", load_challenge("tiny"))
    first._launch(req, load_challenge("tiny"), opened, tmp_path / "w", 1)
    assert len(fake_hub.jobs) == 2
    time.sleep(0.6)  # its lease expires
    harness = next(j for j in fake_hub.jobs.values() if j.spec["labels"][J.LABEL_ROLE] == "harness")
    play_harness(fake_hub, sample_bundle, keypair, tmp_path)
    fake_hub.on_job(harness)  # the harness job finishes on its own
    handled = Dispatcher(cfg).run(once=True)
    assert [h.state for h in handled] == ["FINISHED"]
    assert len(fake_hub.jobs) == 2  # nothing launched twice
    (done,) = queue.list_requests()
    assert done.doc["result"]["jobs"]["harness"] == harness.id


@pytest.mark.fires("image.network")
def test_a_build_step_that_reached_for_the_network_is_rejected_before_any_job(
    fake_hub: FakeHub, sample_bundle: Path, keypair: KeyPair, tmp_path: Path
) -> None:
    """The dispatcher rebuilds before it launches anything: a step that fetched ends the
    request REJECTED on ``image.network``, signed, with no job started."""
    step = "5/9 : RUN curl -o /x http://example.org/x"

    def fetching_build(root: Path, manifest: Any, spec: Any, *, tag: str) -> dict[str, Any]:
        raise dockerx.build_failure(
            tag, "returned a non-zero code: 6", f"Step {step}\ncurl: (6) Could not resolve host\n"
        )

    queue = HubQueue("org/queue", endpoint=fake_hub.endpoint, cache_dir=tmp_path / "c")
    queue.submit([describe_bundle(sample_bundle)])
    cfg = dataclasses.replace(make_config(fake_hub, tmp_path, keypair, queue), build=fetching_build)
    (handled,) = Dispatcher(cfg).run(once=True)
    assert fake_hub.jobs == {}
    (req,) = queue.list_requests()
    report = json.loads(Path(req.doc["result"]["logs"]["report"]).read_text())
    assert report["verdict"] == "REJECTED", (handled, report["findings"])
    (found,) = [f for f in report["findings"] if f["check_id"] == "image.network"]
    assert step in found["message"] and "http://example.org/x" in found["hint"]
