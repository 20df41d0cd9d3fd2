"""``podium worker``: claim a request, verify it, publish the record, mark it, repeat.

Exactly once, with leases rather than trust:

- a claim holds a lease that a background thread renews every ``lease_s / 3``;
- before publishing, the worker renews once more, which fails if the request is no
  longer its own (its lease expired and another worker took it, or it was cancelled):
  the result is then dropped, so a request is never verified twice to completion;
- between that renewal and the final mark the lease still has ``lease_s`` to run, so
  nobody else can take the request meanwhile; record ids are content-derived, so even a
  repeated publish of one report adds nothing.

A crash loses nothing: the lease expires and another worker takes the request over.
SIGINT or SIGTERM lets the current verification finish, marks it, and stops; a second
signal interrupts it, releases the claim (back to PENDING) and stops.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium.errors import PodiumError
from podium.signing import KeyPair
from schemas.challenge import ChallengeSpec, ReferenceEngine, load_challenge
from verifier.pipeline import Outcome, VerifyRequest, verify
from verifier.queue.lease import LeaseKeeper
from verifier.queue.request import Claim, QueueRequest
from verifier.queue.stores.base import QueueStore, default_identity
from verifier.runners.base import Runner

VerifyFn = Callable[[VerifyRequest], Outcome]
Say = Callable[[str], None]


@dataclass
class WorkerConfig:
    queue: QueueStore
    key: KeyPair
    runner: Callable[[], Runner]
    out_dir: Path
    store: Any = None  # a leaderboard Store; None verifies without publishing
    heldout: str | None = None
    reference: Callable[[ReferenceEngine], Runner] | None = None
    worker_id: str = field(default_factory=default_identity)
    lease_s: float = 900.0
    poll_s: float = 30.0
    verify_fn: VerifyFn = verify
    spec_for: Callable[[str], ChallengeSpec] = load_challenge


@dataclass
class Handled:
    request_id: str
    state: str
    verdict: str | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "state": self.state,
            "verdict": self.verdict,
            "note": self.note,
        }


class Worker:
    def __init__(self, cfg: WorkerConfig, say: Say | None = None):
        self.cfg = cfg
        self.say: Say = say or (lambda _line: None)
        self._stopping = threading.Event()
        self.handled: list[Handled] = []

    # -- lifecycle ---------------------------------------------------------------

    def stop(self) -> None:
        """Finish the current request, then stop (what the first signal does)."""
        self._stopping.set()

    def _on_signal(self, signum: int, _frame: Any) -> None:
        if self._stopping.is_set():
            raise KeyboardInterrupt  # second signal: interrupt, release the claim
        self.say(f"signal {signum}: finishing the current request, then stopping")
        self.stop()

    def run(self, *, once: bool = False, install_signals: bool = False) -> list[Handled]:
        """Work until stopped (``once``: at most one request, and only if one is waiting)."""
        old: dict[signal.Signals, Any] = {}
        if install_signals and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                old[sig] = signal.signal(sig, self._on_signal)
        try:
            while not self._stopping.is_set():
                got = self.cfg.queue.claim(self.cfg.worker_id, self.cfg.lease_s)
                if got is None:
                    if once:
                        break
                    self._stopping.wait(self.cfg.poll_s)
                    continue
                self.handled.append(self.work_one(*got))
                if once:
                    break
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
        return self.handled

    # -- one request -------------------------------------------------------------

    def work_one(self, req: QueueRequest, claim: Claim) -> Handled:
        cfg, rid = self.cfg, req.request_id
        who = f"{req.doc['team']}/{req.doc['entry']}"
        self.say(f"claimed {rid} ({who}, attempt {req.doc['attempts']})")
        out = cfg.out_dir / rid / f"attempt-{req.doc['attempts']}"
        with LeaseKeeper(cfg.queue, cfg.lease_s) as keeper:
            keeper.hold(claim)
            try:
                outcome = self._verify(req, out)
            except KeyboardInterrupt:
                with contextlib.suppress(PodiumError):
                    cfg.queue.release(keeper.claim(rid), f"worker {cfg.worker_id} was interrupted")
                self.say(f"interrupted: released {rid}")
                raise
            except PodiumError as exc:
                return conclude_failed(cfg.queue, keeper, rid, f"could not verify: {exc}", self.say)
            return conclude(cfg.queue, keeper, rid, outcome, cfg.store, cfg.key, self.say)

    def _verify(self, req: QueueRequest, out: Path) -> Outcome:
        cfg = self.cfg
        bundle = cfg.queue.fetch_bundle(req, out / "bundle")
        vreq = VerifyRequest(
            bundle=bundle,
            spec=cfg.spec_for(req.doc["challenge"]),
            runner=cfg.runner(),
            out_dir=out,
            reported_tps=req.doc["reported_tps"],
            heldout=cfg.heldout,
            key=cfg.key,
            reference=cfg.reference,
        )
        started = time.monotonic()
        outcome = cfg.verify_fn(vreq)
        self.say(
            f"verified {req.request_id}: {outcome.verdict} in {time.monotonic() - started:.1f} s"
        )
        return outcome


def conclude(
    queue: QueueStore,
    keeper: LeaseKeeper,
    rid: str,
    outcome: Outcome,
    store: Any,
    key: KeyPair,
    say: Say,
    extra: dict[str, Any] | None = None,
) -> Handled:
    """Fence, publish, mark: what happens to a verification's outcome (worker and dispatcher)."""
    report = outcome.report
    result: dict[str, Any] = {
        "verdict": outcome.verdict,
        "report_id": report["report_id"],
        "logs": {"report": str(outcome.report_path)},
    }
    for k, v in (extra or {}).items():
        result[k] = {**result.get(k, {}), **v} if isinstance(v, dict) else v
    # the fence: still ours right now, and for lease_s from now
    if not keeper.renew_now(rid):
        say(f"dropped the result of {rid}: {keeper.lost(rid)}")
        return Handled(rid, "LOST", outcome.verdict, keeper.lost(rid) or "")
    if outcome.verdict == "FAILED" or not outcome.signed:
        failure = (report.get("failure") or {}).get("message") or "no signed report"
        return conclude_failed(queue, keeper, rid, f"verification FAILED: {failure}", say, result)
    if store is not None:
        from leaderboard.publish import publish_reports

        try:
            published = publish_reports([report], store, key)
        except PodiumError as exc:
            msg = (
                f"verified ({outcome.verdict}) but not published: {exc}; retry with "
                f"`podium leaderboard publish {outcome.report_path} --store {store.url}`"
            )
            return conclude_failed(queue, keeper, rid, msg, say, result)
        result.update(
            store=published.store,
            published=True,
            record_ids=[r["record_id"] for r in published.records],
        )
    try:
        queue.finish(keeper.claim(rid), result)
    except (PodiumError, KeyError) as exc:
        say(f"could not mark {rid} FINISHED: {exc}")
        return Handled(rid, "LOST", outcome.verdict, str(exc))
    finally:
        keeper.drop(rid)
    say(f"finished {rid}: {outcome.verdict}")
    return Handled(rid, "FINISHED", outcome.verdict)


def conclude_failed(
    queue: QueueStore,
    keeper: LeaseKeeper,
    rid: str,
    message: str,
    say: Say,
    result: dict[str, Any] | None = None,
) -> Handled:
    try:
        queue.fail(keeper.claim(rid), message, result)
    except (PodiumError, KeyError) as exc:
        say(f"could not mark {rid} FAILED: {exc}")
        return Handled(rid, "LOST", None, str(exc))
    finally:
        keeper.drop(rid)
    say(f"failed {rid}: {message}")
    return Handled(rid, "FAILED", (result or {}).get("verdict"), message)
