"""Open a competition from the organizer's files, and serve it.

``load_spec`` is the one place the server and its workers read the challenge from.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

from competition.db import DbQueue
from competition.door import Door, DoorConfig
from competition.identity import HubIdentity
from competition.roster import load_roster, quota_in_force
from podium.errors import UsageError
from podium.signing import KeyPair
from schemas.challenge import ChallengeSpec, QuotaRules, load_challenge


def load_spec(ref: str) -> ChallengeSpec:
    """The challenge the competition runs: a shipped name or a spec file's path."""
    return load_challenge(ref)


def open_door(
    *,
    db: str,
    roster: Path,
    challenge: str,
    admin_token: str,
    worker_tokens: list[str],
    store: str | None = None,
    key: KeyPair | None = None,
    quota_user: int | None = None,
    quota_team: int | None = None,
    hub_endpoint: str | None = None,
    intake_processes: int = 0,
) -> Door:
    if not admin_token:
        raise UsageError("the server needs an admin token", hint="pass --admin-token T")
    the_roster = load_roster(roster)
    spec = load_spec(challenge)
    quota = quota_in_force(
        spec.competition.quota if spec.competition else None,
        the_roster.quota,
        QuotaRules(per_user=quota_user, per_team=quota_team),
    )
    the_store = None
    if store:
        from leaderboard.stores import open_store

        the_store = open_store(store)
    cfg = DoorConfig(
        spec=spec,
        roster=the_roster,
        quota=quota,
        admin_token=admin_token,
        key=key,
        store=the_store,
        intake_processes=intake_processes,
    )
    door = Door(DbQueue(db), cfg, HubIdentity(hub_endpoint))
    for token in worker_tokens:
        door.workers.add(token)
    return door


def serve(door: Door, *, host: str, port: int, ready: Callable[[str], None]) -> None:
    """Listen on ``host:port`` (0: any free port), tell ``ready`` the URL, serve until
    SIGINT or SIGTERM (uvicorn's own handling)."""
    import uvicorn

    from competition.server import build_app

    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(256)
    ready(f"http://{host}:{sock.getsockname()[1]}")
    config = uvicorn.Config(build_app(door), log_level="warning", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[sock])
