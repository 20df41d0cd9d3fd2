"""How a claim crosses the wire between ``podium server`` and its workers."""

from __future__ import annotations

from typing import Any

from podium.errors import UsageError
from verifier.scale.queue import request as rq
from verifier.scale.queue.request import Claim, parse_time


def claim_to_dict(c: Claim) -> dict[str, Any]:
    return {
        "request_id": c.request_id,
        "worker": c.worker,
        "token": c.token,
        "lease_until": rq.iso(c.lease_until),
    }


def claim_from_dict(d: dict[str, Any]) -> Claim:
    try:
        return Claim(d["request_id"], d["worker"], d["token"], parse_time(d["lease_until"]))
    except (KeyError, TypeError, ValueError):
        raise UsageError("a claim needs request_id, worker, token and lease_until") from None
