"""What every queue store offers, and the parts of it that do not depend on where it lives.

A store keeps, at the same relative paths in a local folder and in a Hub dataset::

    requests/<state>/<submitted>-<request_id>.json   one file per request
    bundles/<sha256>.tar.gz                           the submitted bundles, by content

The high-level operations (``claim``, ``renew``, ``finish``...) are written once here
over one primitive each store provides: ``_change``, which applies a pure function to
the requests it names and writes the results atomically (a lock and renames locally;
one commit with the parent revision on the Hub, repeated when someone else won).
"""

from __future__ import annotations

import os
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from podium.canonical import sha256_file
from podium.errors import StoreError, UsageError
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import Claim, LeaseLost, QueueRequest

#: a change: given the requests found (None where absent), the new documents to write
Change = Callable[[list[QueueRequest | None]], list[QueueRequest]]


def default_identity() -> str:
    """Who is acting, for the history: ``$PODIUM_WORKER`` or ``user@host:pid``."""
    if os.environ.get("PODIUM_WORKER"):
        return os.environ["PODIUM_WORKER"]
    user = os.environ.get("USER") or "podium"
    return f"{user}@{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class BundleToSubmit:
    path: Path
    challenge: str
    team: str
    entry: str
    sha256: str
    size: int
    reported_tps: float | None


def describe_bundle(path: Path, reported_tps: float | None = None) -> BundleToSubmit:
    """The bundle's challenge, team and entry, once the whole bundle has been read as
    intake reads it (``submission.safe_bundle.check_bundle``): a damaged bundle is a
    ``BundleError`` here, before anything is stored."""
    from submission.safe_bundle import check_bundle

    if not path.is_file():
        raise UsageError(
            f"no such bundle: {path}", hint="package one with `podium submission package`"
        )
    manifest = check_bundle(path)
    if reported_tps is None and manifest.reported is not None:
        reported_tps = manifest.reported.tps
    return BundleToSubmit(
        path=path,
        challenge=manifest.challenge.id,
        team=manifest.team,
        entry=manifest.entry,
        sha256=sha256_file(path),
        size=path.stat().st_size,
        reported_tps=float(reported_tps) if reported_tps is not None else None,
    )


class WorkQueue(Protocol):
    """What a process that drains a queue needs of it: a store itself, or a competition's
    server reached over HTTP (``competition.client.ServerQueue``)."""

    url: str

    def claim(
        self, worker: str, lease_s: float, challenge: str | None = None
    ) -> tuple[QueueRequest, Claim] | None: ...

    def renew(self, claims: list[Claim], lease_s: float) -> tuple[list[Claim], list[str]]: ...

    def finish(
        self, claim: Claim, result: dict[str, Any], at: datetime | None = None
    ) -> QueueRequest: ...

    def fail(
        self,
        claim: Claim,
        message: str,
        result: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> QueueRequest: ...

    def release(self, claim: Claim, note: str) -> QueueRequest: ...

    def fetch_bundle(self, req: QueueRequest, dest: Path) -> Path: ...


def require_challenge(bundles: list[BundleToSubmit], challenge_id: str) -> None:
    """Refuse (``UsageError``) a bundle whose manifest names another challenge than the
    one given with ``--challenge``, naming both, before anything is stored."""
    for b in bundles:
        if b.challenge != challenge_id:
            raise UsageError(
                f"{b.path.name} is for challenge {b.challenge!r}, not {challenge_id!r}",
                hint="submit it without --challenge, or to the queue of its own challenge",
                where=str(b.path),
            )


class QueueStore(ABC):
    """A verification queue; safe for many workers claiming at once."""

    url: str

    # -- primitives each store provides -------------------------------------------

    @abstractmethod
    def _change(self, ids: Sequence[str], change: Change, *, message: str) -> list[QueueRequest]:
        """Read the requests ``ids``, apply ``change``, write the result atomically."""

    @abstractmethod
    def _candidates(self) -> list[str]:
        """Ids of requests that may be claimable (pending, and running ones), oldest first."""

    @abstractmethod
    def _put_bundles(self, bundles: list[BundleToSubmit], docs: list[QueueRequest]) -> None:
        """Store bundles and new request files together (one commit on the Hub)."""

    @abstractmethod
    def list_requests(self, state: str | None = None) -> list[QueueRequest]: ...

    @abstractmethod
    def _download_bundle(self, req: QueueRequest, dest: Path) -> Path: ...

    # -- operations ---------------------------------------------------------------

    def get(self, request_id: str) -> QueueRequest:
        for req in self.list_requests():
            if req.request_id == request_id or req.request_id.startswith(request_id):
                return req
        raise UsageError(f"no request {request_id!r} in {self.url}", hint="see `podium queue list`")

    def submit(self, bundles: list[BundleToSubmit], *, by: str | None = None) -> list[QueueRequest]:
        """Store the bundles and a PENDING request for each; idempotent per bundle."""
        by = by or default_identity()
        existing = {r.request_id: r for r in self.list_requests()}
        fresh: list[QueueRequest] = []
        fresh_bundles: list[BundleToSubmit] = []
        out: list[QueueRequest] = []
        again: list[str] = []
        for b in bundles:
            new = rq.new_request(
                challenge=b.challenge,
                team=b.team,
                entry=b.entry,
                bundle_sha256=b.sha256,
                bundle_size=b.size,
                reported_tps=b.reported_tps,
                by=by,
            )
            old = existing.get(new.request_id)
            if old is None:
                if all(f.request_id != new.request_id for f in fresh):
                    fresh.append(new)
                    fresh_bundles.append(b)
                out.append(new)
            elif old.state in (rq.FAILED, rq.CANCELLED):
                again.append(old.request_id)
            else:
                out.append(old)
        if fresh:
            self._put_bundles(fresh_bundles, fresh)
        if again:

            def back(found: list[QueueRequest | None]) -> list[QueueRequest]:
                return [n for r in found if r is not None and (n := rq.resubmitted(r, by))]

            out += self._change(again, back, message=f"Resubmit {len(again)} request(s)")
        return out

    def claim(
        self, worker: str, lease_s: float, challenge: str | None = None
    ) -> tuple[QueueRequest, Claim] | None:
        """Take the oldest claimable request (pending, or running with an expired lease),
        of ``challenge`` only when one is given."""
        got: list[Claim] = []
        for rid in self._candidates():

            def take(found: list[QueueRequest | None]) -> list[QueueRequest]:
                got.clear()
                req = found[0]
                if req is None or not req.claimable():
                    return []
                if challenge is not None and req.doc["challenge"] != challenge:
                    return []
                new, claim = rq.claimed(req, worker, lease_s)
                got.append(claim)
                return [new]

            written = self._change([rid], take, message=f"Claim {rid[:12]} for {worker}")
            if written and got:
                return written[0], got[0]
        return None

    def renew(self, claims: list[Claim], lease_s: float) -> tuple[list[Claim], list[str]]:
        """Extend every lease in one write; returns (renewed claims, ids whose lease is lost)."""
        if not claims:
            return [], []
        renewed: list[Claim] = []
        lost: list[str] = []

        def extend(found: list[QueueRequest | None]) -> list[QueueRequest]:
            renewed.clear()
            lost.clear()
            out = []
            for claim, req in zip(claims, found, strict=True):
                try:
                    if req is None:
                        raise LeaseLost(f"request {claim.request_id} is gone")
                    new, fresh = rq.renewed(req, claim, lease_s)
                except LeaseLost:
                    lost.append(claim.request_id)
                    continue
                out.append(new)
                renewed.append(fresh)
            return out

        ids = [c.request_id for c in claims]
        self._change(ids, extend, message=f"Renew {len(ids)} lease(s)")
        return list(renewed), list(lost)

    def _holding(
        self, claim: Claim, fn: Callable[[QueueRequest], QueueRequest], message: str
    ) -> QueueRequest:
        def apply(found: list[QueueRequest | None]) -> list[QueueRequest]:
            req = found[0]
            if req is None:
                raise LeaseLost(f"request {claim.request_id} is gone", where=claim.request_id)
            return [fn(req)]

        return self._change([claim.request_id], apply, message=message)[0]

    def finish(
        self, claim: Claim, result: dict[str, Any], at: datetime | None = None
    ) -> QueueRequest:
        """Mark FINISHED; ``at``: the time its history says (default: now)."""
        return self._holding(
            claim,
            lambda r: rq.finished(r, claim, result, at),
            f"Finish {claim.request_id[:12]}: {result.get('verdict')}",
        )

    def fail(
        self,
        claim: Claim,
        message: str,
        result: dict[str, Any] | None = None,
        at: datetime | None = None,
    ) -> QueueRequest:
        return self._holding(
            claim,
            lambda r: rq.failed(r, claim, message, result, at),
            f"Fail {claim.request_id[:12]}",
        )

    def release(self, claim: Claim, note: str) -> QueueRequest:
        return self._holding(
            claim, lambda r: rq.released(r, claim, note), f"Release {claim.request_id[:12]}"
        )

    def cancel(self, request_id: str, *, by: str | None = None) -> QueueRequest:
        rid = self.get(request_id).request_id
        who = by or default_identity()

        def apply(found: list[QueueRequest | None]) -> list[QueueRequest]:
            if found[0] is None:
                raise UsageError(f"no request {rid}")
            return [rq.cancelled(found[0], who)]

        return self._change([rid], apply, message=f"Cancel {rid[:12]}")[0]

    def fetch_bundle(self, req: QueueRequest, dest: Path) -> Path:
        """The request's bundle under ``dest``, its sha256 checked."""
        dest.mkdir(parents=True, exist_ok=True)
        path = self._download_bundle(req, dest)
        if sha256_file(path) != req.bundle_sha256:
            raise StoreError(
                f"the stored bundle of {req.request_id} does not match its sha256",
                where=req.doc["bundle"]["path"],
            )
        return path
