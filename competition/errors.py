"""The door's refusals: each a podium error with the HTTP status it is answered with.

    PodiumError
    ├── UsageError
    │   ├── NotLoggedIn           401  no token, or the Hub does not know it
    │   ├── NotFound              404  no such request (or not the caller's team's)
    │   └── WrongChallenge        422  the bundle (or a worker) is for another challenge
    ├── Refused(UsageError)       403  a user on no team, another team's name, a revoked token
    ├── QuotaExceeded             429  over a quota; ``retry_after`` seconds, ``next_slot``
    └── StoreError
        └── DatabaseUnavailable   503  the database cannot be reached; nothing was written

A ``BundleError`` from the safe reader is answered 400 (413 when too large) with its
``finding_id``; a ``LeaseLost`` 409; a ``HubError`` (whoami failed) 502. ``status_of``
is the one place that maps them.
"""

from __future__ import annotations

from podium.errors import (
    EXIT_CANNOT_EVALUATE,
    EXIT_FINDINGS,
    BundleError,
    HubError,
    PodiumError,
    SchemaError,
    StoreError,
    UsageError,
)
from schemas.check_ids import BUNDLE_TOO_LARGE
from verifier.scale.queue.request import LeaseLost


class NotLoggedIn(UsageError):
    status = 401


class Refused(UsageError):
    status = 403
    exit_code = EXIT_FINDINGS  # refused, as a rejected bundle is


class NotFound(UsageError):
    status = 404


class WrongChallenge(UsageError):
    status = 422


class QuotaExceeded(PodiumError):
    status = 429
    exit_code = EXIT_CANNOT_EVALUATE  # not now: try again at next_slot

    def __init__(self, message: str, *, retry_after: int, next_slot: str, hint: str):
        super().__init__(message, hint=hint)
        self.retry_after = retry_after
        self.next_slot = next_slot


class DatabaseUnavailable(StoreError):
    status = 503


def status_of(exc: PodiumError) -> int:
    """The HTTP status a podium error is answered with."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return status
    if isinstance(exc, BundleError):
        return 413 if exc.finding_id == BUNDLE_TOO_LARGE else 400
    if isinstance(exc, LeaseLost):
        return 409
    if isinstance(exc, HubError):
        return 502
    if isinstance(exc, UsageError | SchemaError):
        return 400
    return 500
