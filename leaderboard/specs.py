"""What the leaderboard reads from the shipped challenge specs: keys and noise.

Both come with podium, never with a store: ``leaderboard.keys`` (the organizers' public
keys, see ``leaderboard.trust``) and ``leaderboard.tps_noise`` (TPS's run-to-run noise
and its source, see ``leaderboard.ranking``). A store's rows of a challenge podium does
not ship are checked against ``--pubkey`` keys and ranked on their measured intervals.
"""

from __future__ import annotations

from functools import cache

from schemas.challenge import ChallengeSpec, list_challenges, load_challenge


@cache
def shipped_specs() -> tuple[ChallengeSpec, ...]:
    return tuple(load_challenge(name) for name in list_challenges())


def stated_noise() -> dict[str, tuple[float, str | None]]:
    """Challenge id -> (relative run-to-run noise of TPS, where the number comes from)."""
    out: dict[str, tuple[float, str | None]] = {}
    for spec in shipped_specs():
        noise = spec.leaderboard.tps_noise if spec.leaderboard else None
        if noise is not None:
            out[spec.id] = (float(noise.relative), noise.source)
    return out


def known_challenges() -> list[str]:
    return sorted(spec.id for spec in shipped_specs())
