"""Hand out a stored bundle only as the signed head lists it.

A bundle (``bundles/<sha256>.tar.gz``) is a leaf of the store's signed head
(``leaderboard.log``), so the set check knows whether each one is listed and present. Its
bytes are not hashed by every view (a bundle can be large); they are hashed here, by
the view that hands one out (``serve``'s link, ``export --bundles``), before any byte
leaves, and by ``verify`` for all of them: a file whose bytes are not the ones the head
lists was swapped, and is refused.

What it trusts: the sound head's leaves (``StoreCheck.bundles``: the bundles it lists);
the stored file only through its sha256.
"""

from __future__ import annotations

from leaderboard.setcheck import SetProblem
from leaderboard.stores.base import Store, bundle_path
from leaderboard.verify import StoreCheck
from podium.canonical import sha256_bytes
from podium.errors import StoreError


def checked_bundle(store: Store, check: StoreCheck, sha: str) -> bytes:
    """The bytes of bundle ``sha``, listed in the store's sound head and matching it; a
    ``StoreError`` says why not (not listed, not in the store, other bytes)."""
    path = bundle_path(sha)
    if check.checked and sha not in check.bundles:
        raise StoreError(
            f"{path} is not listed in the store's signed head: not handed out",
            where=path,
            hint="podium leaderboard verify shows what the head lists",
        )
    data = store.read_bundle(sha)
    if data is None:
        raise StoreError(f"{path} is not in the store", where=path)
    got = sha256_bytes(data)
    if got != sha:
        raise StoreError(
            f"{path} holds other bytes (sha256 {got}) than the signed head lists: it was "
            "swapped, and is not handed out",
            where=path,
            hint="the organizers can publish the genuine bundle again",
        )
    return data


def bundle_problems(store: Store, check: StoreCheck) -> list[SetProblem]:
    """Every bundle the sound head lists, read and hashed: an ``altered`` problem for each
    whose bytes are not those listed (what ``verify`` adds to the views' set check)."""
    problems = []
    for sha in sorted(check.bundles):
        try:
            checked_bundle(store, check, sha)
        except StoreError as exc:
            problems.append(SetProblem("altered", exc.message, bundle_path(sha)))
    return problems
