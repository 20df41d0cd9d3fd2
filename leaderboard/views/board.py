"""From a store to what a view shows: checked rows, then boards of the rows that passed.

Every view (``show``, ``export``, ``serve``, ``build-site``) goes through ``read_checked``
and, to rank, ``boards_of``; ``verify`` calls the same check. A challenge filter that
names no challenge podium ships and none the store holds is an error with a suggestion,
never an empty board.
"""

from __future__ import annotations

import difflib
from typing import Any

from leaderboard.checked import check_store
from leaderboard.ranking import Board, build_boards
from leaderboard.specs import known_challenges, stated_noise
from leaderboard.stores.base import Store
from leaderboard.trust import Trust
from leaderboard.verify import StoreCheck
from podium.errors import UsageError


def read_checked(store: Store, trust: Trust | None, challenge: str | None = None) -> StoreCheck:
    """Every row of ``store`` and its whole set checked against ``trust`` (None:
    ``--no-verify``)."""
    check = check_store(store, trust)
    if challenge is not None:
        require_known_challenge(challenge, check)
    return check.for_challenge(challenge)


def require_known_challenge(challenge: str, check: StoreCheck) -> None:
    in_store = {str((g.record.get("challenge") or {}).get("id")) for g in check.good}
    in_store |= {b.challenge for b in check.bad if b.challenge}
    known = sorted(set(known_challenges()) | in_store)
    if challenge in known:
        return
    close = difflib.get_close_matches(challenge, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]}? " if close else ""
    raise UsageError(
        f"unknown challenge {challenge!r} (--challenge): podium ships none by that name "
        "and the store holds no row of it",
        hint=f"{hint}known challenges: {', '.join(known) or 'none'}",
    )


def boards_of(
    check: StoreCheck, *, challenge: str | None = None, best_per_team: bool = True
) -> list[Board]:
    return build_boards(
        check.records, challenge=challenge, best_per_team=best_per_team, noise=stated_noise()
    )


def show_document(check: StoreCheck, boards: list[Board], store: str) -> dict[str, Any]:
    """``show --json``: the check's verdict on every row, then the boards."""
    return {
        "store": store,
        "checked": check.checked,
        "summary": check.summary(),
        "trusted_keys": check.trust.to_dict()["keys"] if check.trust else [],
        "boards": [b.to_dict() for b in boards],
        "unverified": [b.to_dict() for b in check.bad],
        "head": check.head,
        "set_ok": not check.set_problems,
        "set_problems": [p.to_dict() for p in check.set_problems],
        "withdrawn": [w.to_dict() for w in check.withdrawn],
    }
