"""``podium dispatch``: claim requests and verify each with a server job and a harness job.

Per request: fetch the bundle from the queue and open it safely (a bundle that breaks
the rules is REJECTED right here, nothing is built); rebuild the participant's image
without cache from its pinned base and make it pullable; start the **server job** (that
image, the GPU flavour, the pinned weights read-only, no secrets) and the **harness
job** (podium's image, a CPU flavour, the bundle and the held-out set read-only, the
signing key as a secret) in one network group; follow their stages; cancel the server
when the harness ends; keep both logs; take the signed report from the harness log,
check its signature, publish it and mark the request.

Jobs carry labels ``podium.request`` / ``podium.role``: a dispatcher that restarts
(or takes over an expired claim) adopts a harness job still running or completed for
that request instead of launching a second pair. All claims are renewed together in
one write per tick (``LeaseKeeper``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium import __version__
from podium.errors import ImageBuildError, PodiumError
from podium.signing import KeyPair, verify_document
from schemas.challenge import ChallengeSpec, load_challenge
from verifier.checks.limits import build_network
from verifier.intake import Intake, intake
from verifier.pipeline import Outcome, VerifyRequest, verify
from verifier.report import write_report
from verifier.scale.dispatch import jobs as J
from verifier.scale.dispatch.jobs import JobsBackend, JobSpec, JobState, VolumeSpec
from verifier.scale.queue.hold import Hold
from verifier.scale.queue.lease import LeaseKeeper
from verifier.scale.queue.loop import ClaimLoop, Handled, Say, conclude, conclude_failed
from verifier.scale.queue.request import Claim, QueueRequest
from verifier.scale.queue.stores.base import QueueStore, default_identity

ENGINE_ALIAS = "engine"


@dataclass
class DispatchConfig:
    queue: QueueStore
    backend: JobsBackend
    key: KeyPair
    out_dir: Path
    #: where the harness job finds the queue's files (bundles) read-only
    queue_volume: VolumeSpec
    store: Any = None
    heldout: VolumeSpec | None = None
    flavor: str = "a10g-small"
    harness_flavor: str = "cpu-upgrade"
    harness_image: str = f"podium/harness:{__version__}"  # pushed where Jobs can pull it
    max_concurrent: int = 2
    lease_s: float = 900.0
    poll_s: float = 10.0
    job_timeout_s: int = 3600
    dispatcher_id: str = field(default_factory=default_identity)
    spec_for: Callable[[str], ChallengeSpec] = load_challenge
    #: claim requests of this challenge id only (None: any, each against its own spec)
    challenge: str | None = None
    #: challenge id -> the reference the harness job loads its spec by (default: the id)
    challenge_refs: dict[str, str] = field(default_factory=dict)
    model_volume: Callable[[ChallengeSpec], VolumeSpec] | None = None
    #: the challenge's pinned drafter (None: it has none); default: as the model's
    drafter_volume: Callable[[ChallengeSpec], VolumeSpec | None] | None = None
    #: rebuilds the participant's image: (bundle root, manifest, spec, tag) -> image facts
    build: Callable[..., dict[str, Any]] | None = None
    #: when a request's end may show (None: at once, for tests and private queues)
    hold: Hold | None = field(default_factory=Hold)


def default_model_volume(spec: ChallengeSpec, backend: JobsBackend) -> VolumeSpec:
    """Shipped models are host folders (local rehearsals); others the pinned Hub revision."""
    model = spec.model
    return _weights_volume(spec, backend, model.repo_id, model.revision, model.shipped, "model")


def default_drafter_volume(spec: ChallengeSpec, backend: JobsBackend) -> VolumeSpec | None:
    """The challenge's pinned drafter, mounted beside the model; None when it has none."""
    drafter = spec.model.drafter
    if drafter is None:
        return None
    return _weights_volume(
        spec, backend, drafter.repo_id, drafter.revision, drafter.shipped, "drafter"
    )


def _weights_volume(
    spec: ChallengeSpec,
    backend: JobsBackend,
    repo_id: str,
    revision: str,
    shipped: str | None,
    kind: str,
) -> VolumeSpec:
    if shipped:
        if not backend.local_volumes:
            raise PodiumError(
                f"the shipped {kind} of {spec.id!r} is not on the Hub; Jobs cannot mount it",
                hint="rehearse shipped-model challenges with --backend local",
            )
        from verifier.datasets import shipped_path

        return VolumeSpec("local", str(shipped_path(f"{shipped}/{kind}")), f"/{kind}")
    return VolumeSpec("model", repo_id, f"/{kind}", revision=revision)


class Dispatcher:
    def __init__(self, cfg: DispatchConfig, say: Say | None = None):
        self.cfg = cfg
        self.say: Say = say or (lambda _line: None)
        self.loop = ClaimLoop(
            cfg.queue,
            who=cfg.dispatcher_id,
            lease_s=cfg.lease_s,
            poll_s=cfg.poll_s,
            max_concurrent=cfg.max_concurrent,
            say=self.say,
            challenge=cfg.challenge,
        )

    @property
    def handled(self) -> list[Handled]:
        return self.loop.handled

    def stop(self) -> None:
        self.loop.stop()

    def run(self, *, once: bool = False) -> list[Handled]:
        """Keep up to ``max_concurrent`` requests in flight; ``once``: drain what is there."""
        return self.loop.run(self._guarded, until_empty=once)

    def _guarded(self, keeper: LeaseKeeper, req: QueueRequest, claim: Claim) -> Handled:
        try:
            return self.dispatch_one(keeper, req)
        except PodiumError as exc:
            msg = f"could not dispatch: {exc}"
            cfg = self.cfg
            return conclude_failed(cfg.queue, keeper, req.request_id, msg, self.say, hold=cfg.hold)

    # -- one request -------------------------------------------------------------

    def dispatch_one(self, keeper: LeaseKeeper, req: QueueRequest) -> Handled:
        cfg, rid = self.cfg, req.request_id
        attempt = req.doc["attempts"]
        work = cfg.out_dir / rid / f"attempt-{attempt}"
        bundle = cfg.queue.fetch_bundle(req, work / "bundle")
        spec = cfg.spec_for(req.doc["challenge"])
        self.say(f"dispatching {rid} ({req.doc['team']}/{req.doc['entry']}, attempt {attempt})")
        opened = intake(bundle, work / "intake", spec)
        if not opened.ok:  # rules broken: REJECTED here, nothing is built or started
            return self._rejected(keeper, req, bundle, spec, work, opened)
        try:
            pair = self._adopt(rid) or self._launch(req, spec, opened, work, attempt)
        except ImageBuildError as exc:
            fetched = build_network(exc)  # a step that reached for the network: REJECTED
            if not fetched:
                raise
            opened.findings += fetched
            return self._rejected(keeper, req, bundle, spec, work, opened)
        server, harness, group = pair
        final = self._follow(server, harness)
        jobs_rec = {"server": server, "harness": harness, "network_group": group}
        logs = self._keep_logs(work, server, harness)
        cfg.backend.cleanup(group)
        if cfg.build is None:
            remove_engine_image(f"podium-job/{rid}:latest")
        report = J.report_from_logs(logs["harness_lines"])
        extra = {"jobs": jobs_rec, "logs": {k: v for k, v in logs.items() if k != "harness_lines"}}
        if report is None:  # its log stays the organizer's: it may quote the engine
            msg = (
                f"the harness job ended {final.stage} without a report "
                f"(its log is the organizer's: {logs['harness']})"
            )
            return conclude_failed(cfg.queue, keeper, rid, msg, self.say, extra, cfg.hold)
        try:
            verify_document(report, cfg.key.public_key)
        except PodiumError as exc:
            msg = f"the harness job's report does not verify: {exc}"
            return conclude_failed(cfg.queue, keeper, rid, msg, self.say, extra, cfg.hold)
        path = write_report(report, work / "report.json")
        outcome = Outcome(report=report, report_path=path, verdict=report["verdict"], signed=True)
        evidence = J.report_from_logs(logs["harness_lines"], J.EVIDENCE_MARK)
        named = report.get("organizer_evidence")
        if evidence is not None and evidence.get("report_id") == report["report_id"] and named:
            outcome.evidence = evidence
            outcome.evidence_path = write_report(evidence, work / str(named))
        return conclude(
            cfg.queue, keeper, rid, outcome, cfg.store, cfg.key, self.say, extra, cfg.hold
        )

    def _rejected(
        self,
        keeper: LeaseKeeper,
        req: QueueRequest,
        bundle: Path,
        spec: ChallengeSpec,
        work: Path,
        opened: Intake,
    ) -> Handled:
        """A signed REJECTED report from the broken rules found before any job started."""
        cfg = self.cfg
        outcome = verify(
            VerifyRequest(
                bundle=bundle,
                spec=spec,
                runner=None,
                out_dir=work,
                reported_tps=req.doc["reported_tps"],
                key=cfg.key,
                intake=opened,
            )
        )
        return conclude(
            cfg.queue, keeper, req.request_id, outcome, cfg.store, cfg.key, self.say, hold=cfg.hold
        )

    def _adopt(self, rid: str) -> tuple[str, str, str] | None:
        """The job pair a previous dispatch launched for ``rid``, if still worth following."""
        found = self.cfg.backend.find({J.LABEL_REQUEST: rid})
        harnesses = [j for j in found if j.labels.get(J.LABEL_ROLE) == "harness"]
        for h in sorted(harnesses, key=lambda j: j.labels.get(J.LABEL_ATTEMPT, ""), reverse=True):
            if h.stage in ("SCHEDULING", "RUNNING", "COMPLETED"):
                attempt = h.labels.get(J.LABEL_ATTEMPT)
                servers = [
                    j.id
                    for j in found
                    if j.labels.get(J.LABEL_ROLE) == "server"
                    and j.labels.get(J.LABEL_ATTEMPT) == attempt
                ]
                self.say(f"adopting harness job {h.id} of {rid}: already {h.stage}")
                group = h.labels.get("podium.group") or f"podium-{rid[:12]}-{attempt}"
                return (servers[0] if servers else "", h.id, group)
        return None

    def _launch(
        self, req: QueueRequest, spec: ChallengeSpec, opened: Any, work: Path, attempt: int
    ) -> tuple[str, str, str]:
        cfg, rid = self.cfg, req.request_id
        build = cfg.build or build_engine_image
        image = build(opened.root, opened.manifest, spec, tag=f"podium-job/{rid}")
        ref = cfg.backend.publish_image(image["id"], f"req-{rid}")
        group = f"podium-{rid[:12]}-{attempt}"
        labels = {J.LABEL_REQUEST: rid, J.LABEL_ATTEMPT: str(attempt), "podium.group": group}
        manifest = opened.manifest
        model = (cfg.model_volume or (lambda s: default_model_volume(s, cfg.backend)))(spec)
        drafter = (cfg.drafter_volume or (lambda s: default_drafter_volume(s, cfg.backend)))(spec)
        server_spec = JobSpec(
            image=ref,
            command=image["command"],
            flavor=cfg.flavor,
            env={
                **(manifest.engine.env or {}),
                "MODEL_PATH": "/model",
                "PORT": str(manifest.engine.port),
                "SERVED_MODEL_NAME": manifest.engine.served_model_name or "model",
                "HF_HUB_OFFLINE": "1",
                **({"DRAFTER_PATH": drafter.mount_path} if drafter else {}),
            },
            labels={**labels, J.LABEL_ROLE: "server"},
            volumes=[model, *([drafter] if drafter else [])],
            network_group=group,
            network_aliases=[ENGINE_ALIAS],
            timeout_s=cfg.job_timeout_s,
        )
        server = cfg.backend.run(server_spec)
        self.say(f"{rid}: server job {server} ({cfg.flavor})")
        command = [
            "python3", "-m", "podium.cli.app", "harness",
            "--server", f"http://${{HF_NETWORK_GROUP_PREFIX}}{ENGINE_ALIAS}:{manifest.engine.port}",
            "--bundle", f"{cfg.queue_volume.mount_path}/{req.doc['bundle']['path']}",
            "--challenge", cfg.challenge_refs.get(spec.id, spec.id),
            "--out", "/tmp/podium-out",
            "--image-id", image["id"],
            "--server-job", server,
            "--flavor", cfg.flavor,
            "--network-group", group,
        ]  # fmt: skip
        volumes = [cfg.queue_volume]
        if cfg.heldout is not None:
            volumes.append(cfg.heldout)
            command += ["--heldout", cfg.heldout.mount_path]
        if req.doc["reported_tps"] is not None:
            command += ["--reported-tps", str(req.doc["reported_tps"])]
        harness_spec = JobSpec(
            image=cfg.harness_image,
            command=command,
            flavor=cfg.harness_flavor,
            env={"PYTHONUNBUFFERED": "1"},
            secrets={"PODIUM_SIGNING_KEY": cfg.key.private_pem().decode()},
            labels={**labels, J.LABEL_ROLE: "harness"},
            volumes=volumes,
            network_group=group,
            timeout_s=cfg.job_timeout_s,
        )
        harness = cfg.backend.run(harness_spec)
        self.say(f"{rid}: harness job {harness} ({cfg.harness_flavor})")
        return server, harness, group

    def _follow(self, server: str, harness: str) -> JobState:
        cfg = self.cfg
        deadline = time.monotonic() + cfg.job_timeout_s
        while True:
            h = cfg.backend.inspect(harness)
            if h.done:
                break
            if time.monotonic() > deadline:
                cfg.backend.cancel(harness)
                h = JobState(harness, "ERROR", h.labels, "the dispatcher's time limit passed")
                break
            time.sleep(min(cfg.poll_s, 2.0))
        if server:
            s = cfg.backend.inspect(server)
            if not s.done:
                cfg.backend.cancel(server)
        return h

    def _keep_logs(self, work: Path, server: str, harness: str) -> dict[str, Any]:
        work.mkdir(parents=True, exist_ok=True)
        out: dict[str, Any] = {}
        for role, job in (("server", server), ("harness", harness)):
            lines = self.cfg.backend.logs(job) if job else []
            path = work / f"{role}.log"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            out[role] = str(path)
            if role == "harness":
                out["harness_lines"] = lines
        return out


def build_engine_image(
    root: Path, manifest: Any, spec: ChallengeSpec, *, tag: str
) -> dict[str, Any]:
    """Rebuild the participant's image without cache, from the base its manifest pins."""
    from podium import dockerx
    from verifier.rebuild import rebuild_image

    client = dockerx.connect()
    image = rebuild_image(client, root, manifest, spec, tag=tag)
    config = client.images.get(image["id"]).attrs.get("Config") or {}
    return {**image, "command": [*(config.get("Entrypoint") or []), *(config.get("Cmd") or [])]}


def remove_engine_image(tag: str) -> None:
    """Best effort: the rebuilt image is not needed once its server job has ended."""
    import contextlib

    from podium import dockerx

    with contextlib.suppress(Exception):
        dockerx.connect().images.remove(tag, force=True)
