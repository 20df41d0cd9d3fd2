"""``podium worker``: claim a request, verify it here, publish the record, mark it, repeat.

The loop, the leases and the fence before publishing are ``verifier.scale.queue.loop``'s; a
worker is its handler that verifies in this process, one request at a time. A crash
loses nothing: the lease expires and another worker takes the request over. SIGINT or
SIGTERM lets the current verification finish, marks it, and stops; a second signal
interrupts it, releases the claim (back to PENDING) and stops.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from podium.errors import PodiumError, UsageError
from podium.signing import KeyPair
from schemas.challenge import ChallengeSpec, ReferenceEngine, load_challenge
from verifier.declared import DeclaredModel
from verifier.pipeline import Outcome, VerifyRequest, verify
from verifier.runners.base import ReferenceRunner, Runner
from verifier.runners.factory import make_runner, runner_info
from verifier.scale.queue.hold import Hold
from verifier.scale.queue.lease import LeaseKeeper
from verifier.scale.queue.loop import ClaimLoop, Handled, Say, conclude, conclude_failed
from verifier.scale.queue.request import Claim, QueueRequest
from verifier.scale.queue.stores.base import WorkQueue, default_identity

__all__ = ["Handled", "Worker", "WorkerConfig", "sandboxed_runner"]

VerifyFn = Callable[[VerifyRequest], Outcome]


@dataclass
class WorkerConfig:
    queue: WorkQueue
    key: KeyPair
    runner: Callable[[], Runner]
    out_dir: Path
    store: Any = None  # a leaderboard Store; None verifies without publishing
    heldout: str | None = None
    reference: Callable[[ReferenceEngine, DeclaredModel], ReferenceRunner] | None = None
    worker_id: str = field(default_factory=default_identity)
    lease_s: float = 900.0
    poll_s: float = 30.0
    verify_fn: VerifyFn = verify
    spec_for: Callable[[str], ChallengeSpec] = load_challenge
    #: claim requests of this challenge id only (None: any, each against its own spec)
    challenge: str | None = None
    #: when a request's end may show (None: at once, for tests and private queues)
    hold: Hold | None = field(default_factory=Hold)


def sandboxed_runner(name: str) -> Callable[[], Runner]:
    """What makes a fresh runner named ``name`` for each request. A worker signs and
    publishes what it verifies, so a runner with no sandbox is refused."""
    denied = runner_info(name).unsandboxed()
    if denied:
        raise UsageError(
            f"{denied}: a worker signs and publishes what it verifies, so it needs a sandbox",
            hint="run the worker with --runner local-docker or --runner jail",
        )
    return partial(make_runner, name)


class Worker:
    def __init__(self, cfg: WorkerConfig, say: Say | None = None):
        self.cfg = cfg
        self.say: Say = say or (lambda _line: None)
        self.loop = ClaimLoop(
            cfg.queue,
            who=cfg.worker_id,
            lease_s=cfg.lease_s,
            poll_s=cfg.poll_s,
            say=self.say,
            challenge=cfg.challenge,
        )

    @property
    def handled(self) -> list[Handled]:
        return self.loop.handled

    def stop(self) -> None:
        """Finish the current request, then stop (what the first signal does)."""
        self.loop.stop()

    def run(self, *, once: bool = False, install_signals: bool = False) -> list[Handled]:
        """Work until stopped (``once``: at most one request, and only if one is waiting)."""
        return self.loop.run(
            self.work_one,
            limit=1 if once else None,
            until_empty=once,
            install_signals=install_signals,
        )

    def work_one(self, keeper: LeaseKeeper, req: QueueRequest, claim: Claim) -> Handled:
        cfg, rid = self.cfg, req.request_id
        who = f"{req.doc['team']}/{req.doc['entry']}"
        self.say(f"claimed {rid} ({who}, attempt {req.doc['attempts']})")
        out = cfg.out_dir / rid / f"attempt-{req.doc['attempts']}"
        try:
            outcome = self._verify(req, out)
        except KeyboardInterrupt:
            with contextlib.suppress(PodiumError):
                cfg.queue.release(keeper.claim(rid), f"worker {cfg.worker_id} was interrupted")
            keeper.drop(rid)
            self.say(f"interrupted: released {rid}")
            raise
        except PodiumError as exc:
            msg = f"could not verify: {exc}"
            return conclude_failed(cfg.queue, keeper, rid, msg, self.say, hold=cfg.hold)
        return conclude(
            cfg.queue, keeper, rid, outcome, cfg.store, cfg.key, self.say, hold=cfg.hold
        )

    def _verify(self, req: QueueRequest, out: Path) -> Outcome:
        cfg = self.cfg
        bundle = cfg.queue.fetch_bundle(req, out / "bundle")
        runner = cfg.runner()
        # a runner with no sandbox gets neither the held-out set nor the key: its result
        # is unsigned, so the request ends FAILED ("no signed report") and nothing is
        # published
        denied = runner.info.unsandboxed()
        if denied:
            self.say(denied)
        vreq = VerifyRequest(
            bundle=bundle,
            spec=cfg.spec_for(req.doc["challenge"]),
            runner=runner,
            out_dir=out,
            reported_tps=req.doc["reported_tps"],
            heldout=None if denied else cfg.heldout,
            key=None if denied else cfg.key,
            reference=cfg.reference,
        )
        started = time.monotonic()
        outcome = cfg.verify_fn(vreq)
        self.say(
            f"verified {req.request_id}: {outcome.verdict} in {time.monotonic() - started:.1f} s"
        )
        return outcome
