"""The one loop that drains a queue: claim, hand the request over, conclude, repeat.

``podium worker`` and ``podium dispatch`` are this loop with two handlers: a worker
verifies each request here, one at a time, in the calling thread (so a second signal
interrupts the verification itself); a dispatcher keeps up to ``max_concurrent`` job
pairs in flight, each followed on a thread of its own. Either way one ``LeaseKeeper``
renews every claim the process holds in one write per tick, and ``conclude`` is the one
way a verification's outcome ends: hold, fence, publish, mark. The hold keeps the
request's end out of sight until the grid point its report's ``finished`` allows
(``verifier.scale.queue.hold``), so that how long the engine took shows nowhere finer.

Exactly once, with leases rather than trust: before publishing, ``conclude`` renews once
more, which fails if the request is no longer the caller's (its lease expired and
another process took it, or it was cancelled): the result is then dropped. Between that
renewal and the final mark the lease still has ``lease_s`` to run, so nobody else can
take the request meanwhile; record ids are content-derived, so even a repeated publish
of one report adds nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from podium.errors import PodiumError
from podium.signing import KeyPair
from podium.timestamps import iso_utc
from verifier.scale.queue.hold import Hold
from verifier.scale.queue.lease import LeaseKeeper
from verifier.scale.queue.request import Claim, QueueRequest
from verifier.scale.queue.stores.base import WorkQueue

if TYPE_CHECKING:
    from verifier.pipeline import Outcome

Say = Callable[[str], None]


@dataclass
class Handled:
    """What became of one claimed request."""

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


#: a handler takes a claimed request (its claim already held by the keeper) to its end
Handler = Callable[[LeaseKeeper, QueueRequest, Claim], Handled]


class _Inline(Executor):
    """Runs each submitted call at once in the calling thread (one request at a time)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        fut: Future[Any] = Future()
        fut.set_result(fn(*args, **kwargs))  # exceptions (KeyboardInterrupt too) propagate
        return fut


class ClaimLoop:
    """Claim requests from ``queue`` as ``who`` and hand each to a handler."""

    def __init__(
        self,
        queue: WorkQueue,
        *,
        who: str,
        lease_s: float,
        poll_s: float,
        max_concurrent: int = 1,
        say: Say | None = None,
        challenge: str | None = None,
    ):
        self.queue, self.who = queue, who
        #: claim requests of this challenge only (None: any)
        self.challenge = challenge
        self.lease_s, self.poll_s = lease_s, poll_s
        self.max_concurrent = max(1, max_concurrent)
        self.say: Say = say or (lambda _line: None)
        self.handled: list[Handled] = []
        self._stopping = threading.Event()

    def stop(self) -> None:
        """Finish what is in hand, claim nothing more (what the first signal does)."""
        self._stopping.set()

    def _on_signal(self, signum: int, _frame: Any) -> None:
        if self._stopping.is_set():
            raise KeyboardInterrupt  # second signal: interrupt what is in hand
        self.say(f"signal {signum}: finishing the current request(s), then stopping")
        self.stop()

    @contextmanager
    def _signals(self, install: bool) -> Iterator[None]:
        old: dict[signal.Signals, Any] = {}
        if install and threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                old[sig] = signal.signal(sig, self._on_signal)
        try:
            yield
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)

    def run(
        self,
        handle: Handler,
        *,
        limit: int | None = None,
        until_empty: bool = False,
        install_signals: bool = False,
    ) -> list[Handled]:
        """Work until stopped, or until ``limit`` requests were taken, or (``until_empty``)
        until nothing is claimable and nothing is in flight."""
        pool: Executor = (
            _Inline() if self.max_concurrent == 1 else ThreadPoolExecutor(self.max_concurrent)
        )
        taken = 0
        with (
            self._signals(install_signals),
            LeaseKeeper(self.queue, self.lease_s) as keeper,
            pool,
        ):
            running: list[Future[Handled]] = []
            while not self._stopping.is_set():
                running = [f for f in running if not self._collect(f)]
                room = len(running) < self.max_concurrent and (limit is None or taken < limit)
                got = self.queue.claim(self.who, self.lease_s, self.challenge) if room else None
                if got is not None:
                    taken += 1
                    keeper.hold(got[1])
                    running.append(pool.submit(handle, keeper, *got))
                    continue
                if not running and (until_empty or (limit is not None and taken >= limit)):
                    break
                self._stopping.wait(min(self.poll_s, 1.0) if running else self.poll_s)
            for f in running:
                self._collect(f, wait=True)
        return self.handled

    def _collect(self, fut: Future[Handled], wait: bool = False) -> bool:
        if not wait and not fut.done():
            return False
        self.handled.append(fut.result())
        return True


def conclude(
    queue: WorkQueue,
    keeper: LeaseKeeper,
    rid: str,
    outcome: Outcome,
    store: Any,
    key: KeyPair,
    say: Say,
    extra: dict[str, Any] | None = None,
    hold: Hold | None = None,
) -> Handled:
    """Hold, fence, publish, mark: what happens to a verification's ``Outcome``.
    ``hold``: when its end may show (``verifier.scale.queue.hold``; None: at once)."""
    report = outcome.report
    result: dict[str, Any] = {
        "verdict": outcome.verdict,
        "report_id": report["report_id"],
        "logs": {"report": str(outcome.report_path)},
    }
    for k, v in (extra or {}).items():
        result[k] = {**result.get(k, {}), **v} if isinstance(v, dict) else v
    at = _wait(queue, keeper, rid, hold, report, say)
    # the fence: still ours right now, and for lease_s from now
    if not keeper.renew_now(rid):
        say(f"dropped the result of {rid}: {keeper.lost(rid)}")
        return Handled(rid, "LOST", outcome.verdict, keeper.lost(rid) or "")
    if outcome.verdict == "FAILED" or not outcome.signed:
        failure = (report.get("failure") or {}).get("message") or "no signed report"
        msg = f"verification FAILED: {failure}"
        return _mark_failed(queue, keeper, rid, msg, say, result, at)
    if store is not None:
        from leaderboard.publish import publish_reports

        try:
            clock = hold.clock if hold is not None else None
            published = publish_reports([report], store, key, now=clock)
        except PodiumError as exc:
            msg = (
                f"verified ({outcome.verdict}) but not published: {exc}; retry with "
                f"`podium leaderboard publish {outcome.report_path} --store {store.url}`"
            )
            return _mark_failed(queue, keeper, rid, msg, say, result, at)
        result.update(
            store=published.store,
            published=True,
            record_ids=[r["record_id"] for r in published.records],
        )
    try:
        queue.finish(keeper.claim(rid), result, at)
    except (PodiumError, KeyError) as exc:
        say(f"could not mark {rid} FINISHED: {exc}")
        return Handled(rid, "LOST", outcome.verdict, str(exc))
    finally:
        keeper.drop(rid)
    say(f"finished {rid}: {outcome.verdict}")
    return Handled(rid, "FINISHED", outcome.verdict)


def _wait(
    queue: WorkQueue,
    keeper: LeaseKeeper,
    rid: str,
    hold: Hold | None,
    report: dict[str, Any] | None,
    say: Say,
) -> datetime | None:
    """Hold the request's end to the report's grid (the lease kept meanwhile); a second
    signal during the wait lets the request go back to PENDING, unpublished."""
    if hold is None:
        return None
    point = hold.release_at(report)
    if point is not None:
        say(f"holding {rid} until {iso_utc(point)}: a run's end shows only on the report's grid")
    try:
        return hold.until(report)
    except KeyboardInterrupt:
        with contextlib.suppress(PodiumError, KeyError):
            queue.release(keeper.claim(rid), "interrupted while its end was held")
        keeper.drop(rid)
        raise


def conclude_failed(
    queue: WorkQueue,
    keeper: LeaseKeeper,
    rid: str,
    message: str,
    say: Say,
    result: dict[str, Any] | None = None,
    hold: Hold | None = None,
) -> Handled:
    """Mark the request FAILED (no usable report) and let its claim go; ``hold``: held to
    the grid point after now first (the run may have ended when the engine chose)."""
    at = _wait(queue, keeper, rid, hold, None, say)
    return _mark_failed(queue, keeper, rid, message, say, result, at)


def _mark_failed(
    queue: WorkQueue,
    keeper: LeaseKeeper,
    rid: str,
    message: str,
    say: Say,
    result: dict[str, Any] | None,
    at: datetime | None,
) -> Handled:
    try:
        queue.fail(keeper.claim(rid), message, result, at)
    except (PodiumError, KeyError) as exc:
        say(f"could not mark {rid} FAILED: {exc}")
        return Handled(rid, "LOST", None, str(exc))
    finally:
        keeper.drop(rid)
    say(f"failed {rid}: {message}")
    return Handled(rid, "FAILED", (result or {}).get("verdict"), message)
