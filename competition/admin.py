"""The organizer's view of a competition: counts, an ETA, the workers, and the actions
on one request (retry, cancel, re-verify). Each is one function of the door.

The ETA is the work left (pending and running requests) times the median of the
verification times measured on this queue (from each attempt's RUNNING entry in the
history to its conclusion), spread over the workers heard from recently.
"""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Any

from competition.db import now_s
from competition.errors import NotFound
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import QueueRequest, parse_time

if TYPE_CHECKING:
    from competition.door import Door, Participant

#: how many of the latest attempts the median is taken over
RECENT = 50


def counts(door: Door) -> dict[str, Any]:
    return {"counts": door.db.counts()}


def workers(door: Door) -> dict[str, Any]:
    return {"tokens": door.workers.listed(), "live": door.live_workers()}


def durations(reqs: list[QueueRequest]) -> list[tuple[str, float]]:
    """(when it ended, seconds) of every concluded attempt in these requests' histories."""
    out: list[tuple[str, float]] = []
    for req in reqs:
        started: str | None = None
        for step in req.doc["history"]:
            if step["state"] == rq.RUNNING:
                started = step["at"]
            elif started is not None and step["state"] in (rq.FINISHED, rq.FAILED):
                took = (parse_time(step["at"]) - parse_time(started)).total_seconds()
                out.append((step["at"], took))
                started = None
            else:
                started = None
    return out


def eta(door: Door) -> dict[str, Any]:
    c = door.db.counts()
    left = c[rq.PENDING] + c[rq.RUNNING]
    done = [r for r in door.db.select() if r.state in (rq.FINISHED, rq.FAILED)]
    recent = [s for _, s in sorted(durations(done))[-RECENT:]]
    live = door.live_workers()
    median = statistics.median(recent) if recent else None
    seconds = None
    if median is not None and live and left:
        seconds = math.ceil(left / live) * median
    elif left == 0:
        seconds = 0.0
    return {
        "pending": c[rq.PENDING],
        "running": c[rq.RUNNING],
        "live_workers": live,
        "median_verification_s": round(median, 1) if median is not None else None,
        "measured_attempts": len(recent),
        "eta_s": round(seconds, 1) if seconds is not None else None,
        "why_none": None
        if seconds is not None
        else ("no worker heard from recently" if not live else "no verification measured yet"),
    }


def act(door: Door, request_id: str, action: str) -> QueueRequest:
    """retry (FAILED/CANCELLED -> PENDING), cancel, reverify (FINISHED -> PENDING)."""
    rid = door.visible(None, request_id).request_id
    by = "admin"
    if action == "retry":

        def fn(r: QueueRequest) -> QueueRequest:
            again = rq.resubmitted(r, by)
            if again is None:
                raise NotFound(f"request {rid} is {r.state}: only FAILED or CANCELLED ones retry")
            return again

        return door.db.changed(rid, fn)
    if action == "cancel":
        return door.db.changed(rid, lambda r: rq.cancelled(r, by))
    if action == "reverify":
        return door.db.changed(rid, lambda r: rq.requeued(r, by, "re-verify"))
    raise NotFound(f"no action {action!r}", hint="retry, cancel or reverify")


def quota_of(door: Door, who: Participant) -> dict[str, Any]:
    at = now_s()
    with door.db.tx() as conn:
        used = door.usage(conn, who, at)
    return {
        "user": who.user,
        "team": who.team,
        "challenge": door.cfg.spec.id,
        "quota": {
            scope: {"used": u.used, "limit": u.limit, "next_slot": u.next_slot}
            for scope, u in used.items()
        },
    }
