"""Keep leases alive: one background thread renews every claim it holds in one write.

A worker holds one claim; a dispatcher holds one per job pair in flight, and renewing
them together costs one Hub commit per tick instead of one per claim. ``renew_now`` is
also the fence before a result is published: it fails once the claim is no longer ours.
"""

from __future__ import annotations

import threading

from podium.errors import PodiumError
from verifier.scale.queue.request import Claim, now
from verifier.scale.queue.stores.base import WorkQueue


class LeaseKeeper:
    def __init__(self, queue: WorkQueue, lease_s: float):
        self.queue, self.lease_s = queue, lease_s
        self._claims: dict[str, Claim] = {}
        self._lost: dict[str, str] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="lease-keeper")

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def hold(self, claim: Claim) -> None:
        with self._lock:
            self._claims[claim.request_id] = claim
            self._lost.pop(claim.request_id, None)

    def drop(self, request_id: str) -> None:
        with self._lock:
            self._claims.pop(request_id, None)

    def claim(self, request_id: str) -> Claim:
        with self._lock:
            return self._claims[request_id]

    def lost(self, request_id: str) -> str | None:
        with self._lock:
            return self._lost.get(request_id)

    def _loop(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            self.renew_now()

    def renew_now(self, request_id: str | None = None) -> bool:
        """Renew (one claim, or all); True when ``request_id`` (or every claim) is still ours."""
        with self._lock:
            claims = [c for r, c in self._claims.items() if request_id in (None, r)]
        if not claims:
            return request_id is None
        try:
            renewed, lost = self.queue.renew(claims, self.lease_s)
        except PodiumError:  # store unreachable: retried next tick; ours until the lease ends
            return all(c.lease_until > now() for c in claims)
        with self._lock:
            for c in renewed:
                if c.request_id in self._claims:
                    self._claims[c.request_id] = c
            for rid in lost:
                self._claims.pop(rid, None)
                self._lost[rid] = "the lease was lost (expired and taken over, or cancelled)"
        return not lost
