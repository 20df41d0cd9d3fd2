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
from schemas.challenge import ChallengeSpec, load_challenge
from verifier.pipeline import Outcome, VerifyRequest, verify
from verifier.queue.request import Claim, QueueRequest, now
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
    reference: Callable[[], Runner] | None = None
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


class _Renewer:
    """Renews one claim in the background; remembers when it was lost."""

    def __init__(self, queue: QueueStore, claim: Claim, lease_s: float):
        self.queue, self.claim, self.lease_s = queue, claim, lease_s
        self.lost: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="lease-renewer")

    def __enter__(self) -> _Renewer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def _loop(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            self.renew_now()

    def renew_now(self) -> bool:
        if self.lost:
            return False
        try:
            renewed, lost = self.queue.renew([self.claim], self.lease_s)
        except PodiumError:  # store unreachable: retried next tick; ours until the lease ends
            return self.claim.lease_until > now()
        if lost:
            self.lost = "the lease was lost (expired and taken over, or cancelled)"
            return False
        self.claim = renewed[0]
        return True


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
        self.say(
            f"claimed {rid} ({req.doc['team']}/{req.doc['entry']}, attempt {req.doc['attempts']})"
        )
        out = cfg.out_dir / rid / f"attempt-{req.doc['attempts']}"
        with _Renewer(cfg.queue, claim, cfg.lease_s) as renewer:
            try:
                outcome = self._verify(req, out)
            except KeyboardInterrupt:
                with contextlib.suppress(PodiumError):
                    cfg.queue.release(renewer.claim, f"worker {cfg.worker_id} was interrupted")
                self.say(f"interrupted: released {rid}")
                raise
            except PodiumError as exc:
                return self._mark_failed(renewer, rid, f"could not verify: {exc}")
            # the fence: still ours right now, and for lease_s from now
            if not renewer.renew_now():
                self.say(f"dropped the result of {rid}: {renewer.lost}")
                return Handled(rid, "LOST", outcome.verdict, renewer.lost or "")
            return self._conclude(renewer, rid, outcome)

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

    def _conclude(self, renewer: _Renewer, rid: str, outcome: Outcome) -> Handled:
        cfg = self.cfg
        report = outcome.report
        result: dict[str, Any] = {
            "verdict": outcome.verdict,
            "report_id": report["report_id"],
            "logs": {"report": str(outcome.report_path)},
        }
        if outcome.verdict == "FAILED" or not outcome.signed:
            failure = (report.get("failure") or {}).get("message") or "no signed report"
            return self._mark_failed(renewer, rid, f"verification FAILED: {failure}", result)
        if cfg.store is not None:
            from leaderboard.publish import publish_reports

            try:
                published = publish_reports([report], cfg.store, cfg.key)
            except PodiumError as exc:
                msg = (
                    f"verified ({outcome.verdict}) but not published: {exc}; retry with "
                    f"`podium leaderboard publish {outcome.report_path} --store {cfg.store.url}`"
                )
                return self._mark_failed(renewer, rid, msg, result)
            result.update(
                store=published.store,
                published=True,
                record_ids=[r["record_id"] for r in published.records],
            )
        try:
            cfg.queue.finish(renewer.claim, result)
        except PodiumError as exc:
            self.say(f"could not mark {rid} FINISHED: {exc}")
            return Handled(rid, "LOST", outcome.verdict, str(exc))
        self.say(f"finished {rid}: {outcome.verdict}")
        return Handled(rid, "FINISHED", outcome.verdict)

    def _mark_failed(
        self, renewer: _Renewer, rid: str, message: str, result: dict[str, Any] | None = None
    ) -> Handled:
        try:
            self.cfg.queue.fail(renewer.claim, message, result)
        except PodiumError as exc:
            self.say(f"could not mark {rid} FAILED: {exc}")
            return Handled(rid, "LOST", None, str(exc))
        self.say(f"failed {rid}: {message}")
        return Handled(rid, "FAILED", (result or {}).get("verdict"), message)
