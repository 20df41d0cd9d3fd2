"""One verification request: its document, its states and the only ways it may change.

A request is a JSON file (``schemas/json/queue-request.schema.json``) that lives under
``requests/<state>/<submitted>-<request_id>.json`` in the queue, so a worker finds the
pending ones by listing one folder, oldest first, without reading any file.

States and the transitions allowed (each appends ``{state, by, at, note}`` to history)::

    PENDING ──claim──► RUNNING ──finish──► FINISHED     (a signed report, any verdict)
       ▲                  │ └────fail────► FAILED       (no report could be made)
       └──release/expiry──┘
    PENDING / RUNNING ──cancel──► CANCELLED;  FAILED / CANCELLED ──resubmit──► PENDING
    FINISHED ──requeue (an organizer's re-verification)──► PENDING

A claim carries a random ``token`` and a ``lease_until``; only the holder of the token
may renew, finish, fail or release it, and once the lease has passed anyone may claim
the request again. These functions are pure: stores do the reading and atomic writing.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from podium.canonical import canonical_json, sha256_bytes
from podium.errors import StoreError, UsageError
from podium.timestamps import iso_utc
from schemas.validate import validate

PENDING, RUNNING, FINISHED, FAILED, CANCELLED = (
    "PENDING",
    "RUNNING",
    "FINISHED",
    "FAILED",
    "CANCELLED",
)
STATES = (PENDING, RUNNING, FINISHED, FAILED, CANCELLED)
TERMINAL = frozenset({FINISHED, FAILED, CANCELLED})
REQUESTS_DIR = "requests"
BUNDLES_DIR = "bundles"
KIND = "podium.queue-request"


class LeaseLost(StoreError):
    """The claim is no longer ours: it expired and was taken, or the request was cancelled."""


def now() -> datetime:
    return datetime.now(UTC)


def iso(t: datetime) -> str:
    return iso_utc(t, microseconds=True)


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def request_id_for(challenge: str, bundle_sha256: str, reported_tps: float | None) -> str:
    """Content-derived: submitting the same bundle twice is one request."""
    ident = {"challenge": challenge, "bundle_sha256": bundle_sha256, "reported_tps": reported_tps}
    return sha256_bytes(canonical_json(ident))[:24]


def state_dir(state: str) -> str:
    return f"{REQUESTS_DIR}/{state.lower()}"


@dataclass(frozen=True)
class Claim:
    """What a worker holds while it verifies one request."""

    request_id: str
    worker: str
    token: str
    lease_until: datetime


@dataclass(frozen=True)
class QueueRequest:
    doc: dict[str, Any]

    @classmethod
    def parse(cls, doc: dict[str, Any], *, file: str = "<request>") -> QueueRequest:
        validate("queue-request", doc, file=file)
        return cls(doc)

    @property
    def request_id(self) -> str:
        return str(self.doc["request_id"])

    @property
    def state(self) -> str:
        return str(self.doc["state"])

    @property
    def claim(self) -> dict[str, Any] | None:
        claim: dict[str, Any] | None = self.doc["claim"]
        return claim

    @property
    def bundle_sha256(self) -> str:
        return str(self.doc["bundle"]["sha256"])

    @property
    def path(self) -> str:
        """Where this request lives in the queue for its current state."""
        stamp = self.doc["submitted_at"][:19].replace("-", "").replace(":", "")
        return f"{state_dir(self.state)}/{stamp}Z-{self.request_id}.json"

    def lease_expired(self, at: datetime | None = None) -> bool:
        claim = self.claim
        return claim is not None and parse_time(claim["lease_until"]) <= (at or now())

    def claimable(self, at: datetime | None = None) -> bool:
        return self.state == PENDING or (self.state == RUNNING and self.lease_expired(at))

    def to_bytes(self) -> bytes:
        import json

        return (json.dumps(self.doc, indent=2, sort_keys=True) + "\n").encode("utf-8")

    def summary(self) -> dict[str, Any]:
        last = self.doc["history"][-1]
        return {
            "request_id": self.request_id,
            "state": self.state,
            "team": self.doc["team"],
            "entry": self.doc["entry"],
            "challenge": self.doc["challenge"],
            "attempts": self.doc["attempts"],
            "worker": (self.claim or {}).get("worker"),
            "updated_at": last["at"],
            "updated_by": last["by"],
            "verdict": (self.doc["result"] or {}).get("verdict"),
        }


def _step(
    req: QueueRequest, state: str, by: str, note: str | None, at: datetime, **changes: Any
) -> QueueRequest:
    entry: dict[str, Any] = {"state": state, "by": by, "at": iso(at)}
    if note:
        entry["note"] = note[:500]
    doc = {**req.doc, **changes, "state": state, "history": [*req.doc["history"], entry]}
    return QueueRequest.parse(doc)


def new_request(
    *,
    challenge: str,
    team: str,
    entry: str,
    bundle_sha256: str,
    bundle_size: int,
    reported_tps: float | None,
    by: str,
    at: datetime | None = None,
) -> QueueRequest:
    at = at or now()
    doc = {
        "schema_version": 1,
        "kind": KIND,
        "request_id": request_id_for(challenge, bundle_sha256, reported_tps),
        "state": PENDING,
        "challenge": challenge,
        "team": team,
        "entry": entry,
        "bundle": {
            "path": f"{BUNDLES_DIR}/{bundle_sha256}.tar.gz",
            "sha256": bundle_sha256,
            "size": bundle_size,
        },
        "reported_tps": reported_tps,
        "submitted_at": iso(at),
        "submitted_by": by,
        "attempts": 0,
        "claim": None,
        "history": [{"state": PENDING, "by": by, "at": iso(at), "note": "submitted"}],
        "result": None,
    }
    return QueueRequest.parse(doc)


def resubmitted(req: QueueRequest, by: str, at: datetime | None = None) -> QueueRequest | None:
    """A FAILED or CANCELLED request submitted again goes back to PENDING; else unchanged."""
    if req.state not in (FAILED, CANCELLED):
        return None
    return _step(req, PENDING, by, "submitted again", at or now(), claim=None, result=None)


def requeued(req: QueueRequest, by: str, note: str, at: datetime | None = None) -> QueueRequest:
    """An organizer's re-verification: a FINISHED request goes back to PENDING (its old
    result stays in the history's note and in the published rows)."""
    if req.state != FINISHED:
        raise UsageError(
            f"request {req.request_id} is {req.state}, not FINISHED",
            where=req.request_id,
            hint="retry a FAILED or CANCELLED request instead; a PENDING or RUNNING one waits",
        )
    old = (req.doc["result"] or {}).get("verdict")
    return _step(req, PENDING, by, f"{note} (was {old})", at or now(), claim=None, result=None)


def claimed(
    req: QueueRequest, worker: str, lease_s: float, at: datetime | None = None
) -> tuple[QueueRequest, Claim]:
    at = at or now()
    if not req.claimable(at):
        raise LeaseLost(f"request {req.request_id} is {req.state} and held", where=req.request_id)
    note = None
    if req.state == RUNNING:
        old = req.claim or {}
        note = f"lease of {old.get('worker')} expired at {old.get('lease_until')}; taken over"
    token = secrets.token_hex(16)
    until = at + timedelta(seconds=lease_s)
    claim = {"worker": worker, "token": token, "claimed_at": iso(at), "lease_until": iso(until)}
    new = _step(req, RUNNING, worker, note, at, claim=claim, attempts=req.doc["attempts"] + 1)
    return new, Claim(req.request_id, worker, token, until)


def _held(req: QueueRequest, claim: Claim, at: datetime) -> None:
    held = req.claim
    if req.state != RUNNING or held is None or held["token"] != claim.token:
        raise LeaseLost(
            f"request {req.request_id} is no longer held by {claim.worker} (it is {req.state})",
            where=req.request_id,
            hint="another worker took it over after the lease expired, or it was cancelled",
        )
    if parse_time(held["lease_until"]) <= at:
        raise LeaseLost(
            f"the lease of {claim.worker} on {req.request_id} expired at {held['lease_until']}",
            where=req.request_id,
        )


def renewed(
    req: QueueRequest, claim: Claim, lease_s: float, at: datetime | None = None
) -> tuple[QueueRequest, Claim]:
    """Extend the lease; history is not touched (renewals are not state changes)."""
    at = at or now()
    _held(req, claim, at)
    until = at + timedelta(seconds=lease_s)
    doc = {**req.doc, "claim": {**(req.claim or {}), "lease_until": iso(until)}}
    return QueueRequest.parse(doc), replace(claim, lease_until=until)


def finished(
    req: QueueRequest, claim: Claim, result: dict[str, Any], at: datetime | None = None
) -> QueueRequest:
    at = at or now()
    _held(req, claim, at)
    note = f"verdict {result.get('verdict')}" if result.get("verdict") else None
    return _step(req, FINISHED, claim.worker, note, at, claim=None, result=result)


def failed(
    req: QueueRequest,
    claim: Claim,
    message: str,
    result: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> QueueRequest:
    at = at or now()
    _held(req, claim, at)
    res = {**(result or {}), "message": message[:2000]}
    return _step(req, FAILED, claim.worker, message, at, claim=None, result=res)


def released(
    req: QueueRequest, claim: Claim, note: str, at: datetime | None = None
) -> QueueRequest:
    at = at or now()
    _held(req, claim, at)
    return _step(req, PENDING, claim.worker, note, at, claim=None)


def cancelled(req: QueueRequest, by: str, at: datetime | None = None) -> QueueRequest:
    if req.state in TERMINAL:
        raise UsageError(
            f"request {req.request_id} is already {req.state}",
            where=req.request_id,
            hint="only PENDING or RUNNING requests can be cancelled",
        )
    return _step(req, CANCELLED, by, "cancelled", at or now(), claim=None)
