"""Worker tokens: who may claim, renew and conclude requests, and how one is revoked.

Only a token's sha256 is stored. A claim is made in the name ``<token name>/<worker>``,
so revoking a token finds every lease it holds: each goes back to PENDING at once (the
queue's own ``released`` transition, applied with the claim the database holds), and the
revoked worker's next renewal or conclusion is refused; its result is dropped.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import TYPE_CHECKING

import sqlalchemy as sa

from competition.db import now_s, requests_t, workers_t
from competition.errors import NotFound, NotLoggedIn
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import Claim, LeaseLost, parse_time

if TYPE_CHECKING:
    from competition.db import DbQueue


def token_sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


#: how long a token's lookup is remembered (a revocation here forgets it at once)
REMEMBER_S = 5.0


class WorkerTokens:
    def __init__(self, db: DbQueue):
        self.db = db
        self._known: dict[str, tuple[str, float]] = {}

    def add(self, token: str, name: str | None = None) -> str:
        """Allow ``token`` (named ``name``, default ``w-`` and its hash's first 8 digits).
        A token revoked before stays revoked."""
        sha = token_sha(token)
        name = name or f"w-{sha[:8]}"
        with self.db.tx() as conn:
            row = conn.execute(
                sa.select(workers_t.c.name).where(workers_t.c.token_sha256 == sha)
            ).first()
            if row is None:
                conn.execute(workers_t.insert().values(token_sha256=sha, name=name))
                return name
            return str(row.name)

    def name_of(self, token: str | None) -> str:
        """The name of a live worker token; ``NotLoggedIn`` for none, unknown or revoked."""
        hint = "start the worker with the --worker-token the organizer gave you"
        if not token:
            raise NotLoggedIn("no worker token was sent", hint=hint)
        sha = token_sha(token)
        hit = self._known.get(sha)
        if hit is not None and hit[1] > time.monotonic():
            return hit[0]
        with self.db.tx() as conn:
            row = conn.execute(
                sa.select(workers_t.c.token_sha256, workers_t.c.name, workers_t.c.revoked_at).where(
                    workers_t.c.token_sha256 == sha
                )
            ).first()
        if row is None or not hmac.compare_digest(row.token_sha256, sha):
            raise NotLoggedIn("this worker token is not known to the server", hint=hint)
        if row.revoked_at is not None:
            raise NotLoggedIn(
                "this worker token was revoked", hint="ask the organizer for a new one"
            )
        self._known[sha] = (str(row.name), time.monotonic() + REMEMBER_S)
        return str(row.name)

    def revoke(self, name: str, by: str = "admin") -> list[str]:
        """Revoke the token named ``name``; the ids of the requests whose leases it ended."""
        self._known = {sha: hit for sha, hit in self._known.items() if hit[0] != name}
        with self.db.tx() as conn:
            hit = conn.execute(
                workers_t.update()
                .where(workers_t.c.name == name, workers_t.c.revoked_at.is_(None))
                .values(revoked_at=now_s())
            )
            if hit.rowcount == 0:
                raise NotFound(f"no live worker token named {name!r}")
            rows = conn.execute(
                sa.select(requests_t.c.request_id)
                .where(requests_t.c.state == rq.RUNNING, requests_t.c.worker.like(f"{name}/%"))
                .with_for_update()
            )
            ids = [r.request_id for r in rows]
            found = self.db._locked(conn, ids)
            back = []
            for req in found.values():
                held = req.claim or {}
                claim = Claim(
                    req.request_id, held["worker"], held["token"], parse_time(held["lease_until"])
                )
                note = f"the worker token {name} was revoked by {by}"
                try:
                    back.append(rq.released(req, claim, note))
                except LeaseLost:  # the lease had already ended: anyone may claim it
                    continue
            self.db._write(conn, back, set())
        return ids

    def listed(self) -> list[dict[str, object]]:
        with self.db.tx() as conn:
            rows = conn.execute(sa.select(workers_t.c.name, workers_t.c.revoked_at))
            return [{"name": r.name, "revoked": r.revoked_at is not None} for r in rows]
