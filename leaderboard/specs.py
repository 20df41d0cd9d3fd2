"""What the leaderboard reads from the challenge specs: keys, noise, freshness.

The specs in force are podium's shipped specs, and any spec the viewer names itself
(``--challenge`` with a file, a URL or an ``hf://`` reference: ``viewing``), which takes
the place of a shipped spec of the same id. All come from podium or from the viewer,
never from a store: ``leaderboard.keys`` (the organizers' public
keys, see ``leaderboard.trust``), ``leaderboard.tps_noise`` (TPS's run-to-run noise and
its source, see ``leaderboard.ranking``) and ``leaderboard.head_max_age_days`` (how old a
store's signed head may be, see ``leaderboard.setcheck``). A store's rows of a challenge
podium does not ship are checked against ``--pubkey`` keys and ranked on their measured
intervals.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import cache

from schemas.challenge import ChallengeSpec, list_challenges, load_challenge
from schemas.validate import load_schema


@cache
def shipped_specs() -> tuple[ChallengeSpec, ...]:
    return tuple(load_challenge(name) for name in list_challenges())


#: the specs the viewer named, in force while ``viewing`` is open
_named: list[ChallengeSpec] = []


@contextmanager
def viewing(*specs: ChallengeSpec) -> Iterator[None]:
    """Judge with ``specs`` in force (each replaces the shipped spec of its id) until the
    block ends; a view started inside (``serve``) keeps them while it runs."""
    before = list(_named)
    _named[:] = [*specs, *(s for s in before if s.id not in {n.id for n in specs})]
    try:
        yield
    finally:
        _named[:] = before


def specs_in_force() -> tuple[ChallengeSpec, ...]:
    """The specs the viewer named, then the shipped ones of the other ids."""
    named = {s.id for s in _named}
    return (*_named, *(s for s in shipped_specs() if s.id not in named))


def stated_noise() -> dict[str, tuple[float, str | None]]:
    """Challenge id -> (relative run-to-run noise of TPS, where the number comes from)."""
    out: dict[str, tuple[float, str | None]] = {}
    for spec in specs_in_force():
        noise = spec.leaderboard.tps_noise if spec.leaderboard else None
        if noise is not None:
            out[spec.id] = (float(noise.relative), noise.source)
    return out


def known_challenges() -> list[str]:
    return sorted(spec.id for spec in specs_in_force())


def head_max_age_days(challenges: Iterable[str]) -> float:
    """The freshness bound of a store holding ``challenges``: the strictest of their
    specs' ``leaderboard.head_max_age_days``, else the schema's default."""
    default = float(
        load_schema("challenge")["properties"]["leaderboard"]["properties"]["head_max_age_days"][
            "default"
        ]
    )
    held = set(challenges)
    bounds = [
        float(spec.leaderboard.head_max_age_days)
        for spec in specs_in_force()
        if spec.id in held and spec.leaderboard and spec.leaderboard.head_max_age_days
    ]
    return min(bounds, default=default)
