"""The door: who may enter, what they may enter, what each party may see.

A participant is whoever the Hub says holds their token, on the team the roster puts
them in. Their bundle is read whole by intake's safe reader before anything is stored;
its manifest must name this challenge and their own team; it is charged to their user
and team quotas, unless the same bundle (the same digest) is already a request. All of
it (bundle, request, charge) is written in one transaction, or none of it.

A participant sees their team's requests as ``participant_view`` shapes them (states,
verdict, the report's blind-safe feedback), never a bundle; the admin token sees
everything. Workers hold worker tokens; a revoked token ends its leases at once.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from competition import quota as quotas
from competition.db import DbQueue, charges_t, now_s
from competition.errors import NotFound, NotLoggedIn, QuotaExceeded, Refused, WrongChallenge
from competition.intake import Intake
from competition.roster import Quota, Roster
from competition.workers import WorkerTokens
from podium.errors import PodiumError
from podium.signing import KeyPair
from podium.timestamps import iso_utc
from schemas.challenge import ChallengeSpec
from submission.safe_bundle import BundleLimits, manifest_challenge
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import Claim, QueueRequest

#: what of a request's result a participant may read
PARTICIPANT_RESULT = ("verdict", "report_id", "record_ids", "published", "message")


@dataclass(frozen=True)
class Participant:
    user: str
    team: str


@dataclass
class DoorConfig:
    spec: ChallengeSpec
    roster: Roster
    quota: Quota
    admin_token: str
    key: KeyPair | None = None
    store: Any = None  # a leaderboard Store the door publishes workers' reports to
    lease_s: float = 900.0
    live_after_s: float = 120.0  # a worker heard from this recently counts as live
    intake_processes: int = 0  # bundles read in this many processes (0: in the caller)
    seen: dict[str, float] = field(default_factory=dict)


class Door:
    def __init__(self, db: DbQueue, cfg: DoorConfig, identity: Any):
        self.db, self.cfg, self.identity = db, cfg, identity
        self.workers = WorkerTokens(db)
        self.intake = Intake(cfg.intake_processes)
        self._seen_lock = threading.Lock()

    # -- who is asking ------------------------------------------------------------

    def is_admin(self, token: str | None) -> bool:
        return bool(token) and hmac.compare_digest(
            hashlib.sha256(str(token).encode()).digest(),
            hashlib.sha256(self.cfg.admin_token.encode()).digest(),
        )

    def participant(self, token: str | None) -> Participant:
        user = self.identity.user(token)
        team = self.cfg.roster.team_of(user)
        if team is None:
            contact = self.cfg.roster.contact or "the organizer"
            raise Refused(
                f"{user} is on no team of this competition",
                hint=f"ask {contact} to add you to a team in the roster",
            )
        return Participant(user, team)

    def require_admin(self, token: str | None) -> None:
        if not self.is_admin(token):
            raise NotLoggedIn("this needs the admin token", hint="pass --admin-token")

    # -- entering -----------------------------------------------------------------

    def submit(self, who: Participant, bundle: Path) -> tuple[QueueRequest, bool]:
        """Accept ``bundle`` from ``who``: (the request, whether it was charged)."""
        spec = self.cfg.spec
        named = manifest_challenge(bundle)
        if named is not None and named != spec.id:
            raise WrongChallenge(
                f"the bundle is for challenge {named!r}; this server runs {spec.id!r}",
                hint=f"package the entry for {spec.id} (podium submission package)",
            )
        got = self.intake.read(bundle, BundleLimits.of(spec.limits))  # names the finding
        if got.team != who.team:
            raise Refused(
                f"the bundle's manifest names team {got.team!r}, but {who.user} is on "
                f"team {who.team!r}",
                hint=f"set team = {who.team!r} in the entry's podium.toml and package again",
            )
        new = rq.new_request(
            challenge=spec.id,
            team=who.team,
            entry=got.entry,
            bundle_sha256=got.sha256,
            bundle_size=got.size,
            reported_tps=got.reported_tps,
            by=who.user,
        )
        with self.db.tx() as conn:
            self.db.lock_team(conn, who.team)
            old = self.db._locked(conn, [new.request_id]).get(new.request_id)
            if old is not None:  # the same bundle again costs nothing
                again = rq.resubmitted(old, who.user)
                if again is not None:
                    self.db._write(conn, [again], set())
                return again or old, False
            self._charge(conn, who)
            self.db.put_bundle(conn, got.sha256, bundle.read_bytes())
            self.db._write(conn, [new], {new.request_id})
            conn.execute(
                charges_t.insert().values(
                    username=who.user, team=who.team, request_id=new.request_id, at=now_s()
                )
            )
        return new, True

    def usage(self, conn: Any, who: Participant, at: float) -> dict[str, quotas.Usage]:
        q = self.cfg.quota
        since = at - q.window_s
        return {
            "user": quotas.usage(
                self.db.charges(conn, "username", who.user, since), q.per_user, q.window_s, at
            ),
            "team": quotas.usage(
                self.db.charges(conn, "team", who.team, since), q.per_team, q.window_s, at
            ),
        }

    def _charge(self, conn: Any, who: Participant) -> None:
        at = now_s()
        for scope, used in self.usage(conn, who, at).items():
            if used.full:
                name = who.user if scope == "user" else f"team {who.team}"
                slot = iso_utc_s(used.next_slot or at)
                hours = self.cfg.quota.window_s / 3600
                raise QuotaExceeded(
                    f"{name} has used {used.used} of {used.limit} submissions in the last "
                    f"{hours:g} h; the next slot opens at {slot}",
                    retry_after=used.retry_after(at),
                    next_slot=slot,
                    hint=f"submit again after {slot}; the same bundle again costs nothing",
                )

    # -- reading --------------------------------------------------------------------

    def visible(self, who: Participant | None, request_id: str) -> QueueRequest:
        """The request, if ``who`` may see it (None: the admin); else ``NotFound``."""
        matches = [
            r
            for r in self.db.select(team=who.team if who else None)
            if r.request_id.startswith(request_id)
        ]
        if len(matches) != 1:
            raise NotFound(
                f"no request {request_id!r} of team {who.team if who else '(any)'}",
                hint="`podium submission status --server URL` lists your team's requests",
            )
        return matches[0]

    def report_feedback(self, request_id: str) -> dict[str, Any] | None:
        report = self.db.report(request_id)
        if report is None:
            return None
        return {k: report[k] for k in ("verdict", "findings", "metrics") if k in report}

    # -- workers --------------------------------------------------------------------

    def heard_from(self, worker: str) -> None:
        with self._seen_lock:
            self.cfg.seen[worker] = time.monotonic()

    def live_workers(self) -> int:
        cut = time.monotonic() - self.cfg.live_after_s
        with self._seen_lock:
            return sum(1 for t in self.cfg.seen.values() if t > cut)

    def finish(
        self,
        claim: Claim,
        result: dict[str, Any],
        report: dict[str, Any] | None,
        at: datetime | None = None,
    ) -> QueueRequest:
        """The fence and the publish, under the request's row lock: a stale claim (its
        lease ended, or it was taken over) is ``LeaseLost`` and nothing is published."""
        from leaderboard.publish import publish_reports

        with self.db.tx() as conn:
            req = self.db._locked(conn, [claim.request_id]).get(claim.request_id)
            if req is None:
                raise NotFound(f"no request {claim.request_id}")
            new = rq.finished(req, claim, result, at)  # LeaseLost when the claim is stale
            if report is None and self.cfg.store is not None:
                raise Refused(
                    f"a conclusion of {claim.request_id} needs its signed report",
                    hint="the door publishes every FINISHED request's row",
                )
            if report is not None and self.cfg.store is not None and self.cfg.key is not None:
                if report.get("submission", {}).get("bundle_sha256") != req.bundle_sha256:
                    raise Refused("the report is not of this request's bundle")
                who = {"team": req.doc["team"], "user": req.doc["submitted_by"]}
                try:
                    done = publish_reports([report], self.cfg.store, self.cfg.key, submitter=who)
                except PodiumError as exc:
                    msg = f"verified ({result.get('verdict')}) but not published: {exc}"
                    new = rq.failed(req, claim, msg, result, at)
                else:
                    ids = [r["record_id"] for r in done.records]
                    result = {**result, "published": True, "store": done.store, "record_ids": ids}
                    new = rq.finished(req, claim, result, at)
            if report is not None:
                self.db.save_report(conn, claim.request_id, report)
            self.db._write(conn, [new], set())
        return new


def iso_utc_s(t: float) -> str:
    from datetime import UTC, datetime

    return iso_utc(datetime.fromtimestamp(t, UTC))


def participant_view(req: QueueRequest, feedback: dict[str, Any] | None = None) -> dict[str, Any]:
    """What a team may read of its own request: no bundle, no worker's paths or tokens."""
    doc = req.doc
    result = doc["result"] or {}
    out = {
        "request_id": req.request_id,
        "state": req.state,
        "challenge": doc["challenge"],
        "team": doc["team"],
        "entry": doc["entry"],
        "submitted_at": doc["submitted_at"],
        "submitted_by": doc["submitted_by"],
        "bundle_sha256": req.bundle_sha256,
        "attempts": doc["attempts"],
        "history": [{"state": h["state"], "at": h["at"]} for h in doc["history"]],
        **{k: result[k] for k in PARTICIPANT_RESULT if k in result},
    }
    if feedback is not None:
        out["report"] = feedback
    return out
