"""Check a store's whole set against its signed head (``leaderboard.log``).

A row proven genuine says nothing about the rows not shown, so every view also checks:

- ``no-head``: the store holds documents but no signed head (nothing proves the set);
- ``head-unreadable``: ``log/head.json`` is not a head, or its root is not its leaves';
- ``head-unknown-key``, ``head-revoked-key``, ``head-bad-signature``: the head is not
  signed by a key the viewer trusts (or by one since revoked), or it was altered;
- ``rollback``: the head is older than one this viewer checked before, under whatever
  key (or gone);
- ``inconsistent``: it does not extend the one this viewer checked before (the history
  was rewritten: a row removed or replaced), or it is newer but signed earlier;
- ``stale``: it is older than the challenge spec's ``leaderboard.head_max_age_days``
  (the store, or a mirror of it, may be frozen);
- ``missing``: a document the head lists is not in the store (a deleted row);
- ``altered``: a listed document is there with other bytes;
- ``unlisted``: a document is there that the head does not list (a row added without
  the organizer's key); such a row is never ranked;
- ``bad-document``: a withdrawal or key rotation that no trusted key signed.

What it trusts: the head only through its signature by a key of the viewer's ``Trust``
(which the caller extends with the rotations the viewer remembers, so a key rotated away
or revoked stays so when a writer deletes the rotation); the viewer's own memory of heads
(``leaderboard.seen``), whatever key signed them; nothing else in the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from leaderboard.log import HEAD_PATH, Head, extends, parse_head, verify_head
from leaderboard.seen import SeenHeads
from leaderboard.stores.base import BUNDLES_DIR, RawRecord, bundle_sha
from leaderboard.trust import Trust
from podium.canonical import sha256_bytes
from podium.errors import SignatureError, StoreError

SET_KINDS = (
    "no-head",
    "head-unreadable",
    "head-unknown-key",
    "head-revoked-key",
    "head-bad-signature",
    "rollback",
    "inconsistent",
    "stale",
    "missing",
    "altered",
    "unlisted",
    "bad-document",
)


@dataclass(frozen=True)
class SetProblem:
    kind: str
    message: str
    path: str | None = None
    team: str | None = None
    entry: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "message": self.message,
            "path": self.path,
            "team": self.team,
            "entry": self.entry,
        }

    def line(self) -> str:
        """How a terminal view prints it."""
        return f"SET CHECK FAILED ({self.kind}): {self.message}"


@dataclass
class HeadState:
    """The head of one snapshot, as far as the viewer could check it."""

    head: Head | None = None
    #: its signature checks against a trusted key: the leaves vouch for the files
    sound: bool = False
    problems: list[SetProblem] = field(default_factory=list)
    #: remember it after the view (sound, neither older nor rewritten)
    remember: bool = False
    #: what a view says without failing (a store with no head and nothing in it)
    warnings: list[SetProblem] = field(default_factory=list)

    @property
    def leaves(self) -> dict[str, dict[str, Any]]:
        if self.head is None or not self.sound:
            return {}
        return {leaf["path"]: leaf for leaf in self.head.leaves}


def _when(stamp: str) -> datetime | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def _days(seconds: float) -> str:
    days = seconds / 86400
    return f"{days:.1f} days" if days < 10 else f"{days:.0f} days"


def _head_key(head: Head, trust: Trust) -> tuple[Any | None, SetProblem | None]:
    """The trusted key that should have signed ``head``, or the problem with its key."""
    mine = [k for k in trust.keys if k.key_id == head.key_id]
    revoked = [k for k in mine if k.revoked_at]
    if revoked:
        return None, SetProblem(
            "head-revoked-key",
            f"{head.describe()} is signed by key {head.key_id}, revoked on "
            f"{revoked[0].revoked_at}: nothing proves the set",
            HEAD_PATH,
        )
    for k in mine:
        if k.valid_from and head.made_at < k.valid_from:
            continue
        if k.valid_until and head.made_at > k.valid_until:
            continue
        return k, None
    why = "which this viewer does not trust" if not mine else "outside its validity period"
    return None, SetProblem(
        "head-unknown-key",
        f"{head.describe()} is signed by key {head.key_id}, {why}: nothing proves the set "
        "(pass the organizers' key with --pubkey)",
        HEAD_PATH,
    )


def _missing_head(remembered: dict[str, Any] | None, *, has_documents: bool) -> SetProblem | None:
    """The problem of a store with no head: rolled back if one was seen, else unproven."""
    if remembered is not None:
        return SetProblem(
            "rollback",
            f"the store has no signed head, but this viewer checked head "
            f"v{remembered['version']} of it ({remembered['made_at']}, "
            f"{remembered['size']} leaves): it was rolled back or its head deleted",
            HEAD_PATH,
        )
    if has_documents:
        return SetProblem(
            "no-head",
            f"the store has no signed head ({HEAD_PATH}): nothing proves that no row "
            "was removed (the organizers sign one with podium leaderboard sign-head)",
            HEAD_PATH,
        )
    return None


def _rewound(head: Head, remembered: dict[str, Any] | None) -> SetProblem | None:
    """The problem if ``head`` is older than, or does not extend, the one seen before."""
    if remembered is None:
        return None
    old_v, old_size, old_root = (
        int(remembered["version"]),
        int(remembered["size"]),
        str(remembered["root"]),
    )
    seen_as = f"head v{old_v} ({remembered['made_at']}, {old_size} leaves)"
    if head.version < old_v:
        return SetProblem(
            "rollback",
            f"{head.describe()} is older than {seen_as}, which this viewer checked "
            "before: the store was rolled back",
            HEAD_PATH,
        )
    if head.version > old_v and head.made_at < str(remembered["made_at"]):
        return SetProblem(
            "inconsistent",
            f"{head.describe()} is newer than {seen_as}, which this viewer checked before, "
            "but signed earlier: it was made after the fact (a backdated head)",
            HEAD_PATH,
        )
    if not extends(head, old_size, old_root):
        return SetProblem(
            "inconsistent",
            f"{head.describe()} does not extend {seen_as}, which this viewer checked "
            "before: its history was rewritten (a row removed or replaced)",
            HEAD_PATH,
        )
    return None


def _stale(head: Head, max_age_days: float, clock: datetime) -> SetProblem | None:
    """The problem if ``head`` was signed longer than ``max_age_days`` before ``clock``."""
    made = _when(head.made_at)
    if made is not None and (clock - made).total_seconds() > max_age_days * 86400:
        age = _days((clock - made).total_seconds())
        return SetProblem(
            "stale",
            f"{head.describe()} was signed {age} ago, longer than the freshness bound of "
            f"{max_age_days:g} days: the store or its mirror may be frozen",
            HEAD_PATH,
        )
    return None


def check_head(
    data: bytes | None,
    trust: Trust,
    *,
    seen: SeenHeads | None,
    identity: str,
    max_age_days: float,
    has_documents: bool,
    now: datetime | None = None,
) -> HeadState:
    """Parse and check the head bytes ``data`` of the store named ``identity``."""
    state = HeadState()
    remembered = seen.latest(identity) if seen is not None else None
    if data is None:
        missing = _missing_head(remembered, has_documents=has_documents)
        if missing is not None:
            state.problems.append(missing)
        else:
            state.warnings.append(
                SetProblem(
                    "no-head",
                    f"the store has no signed head ({HEAD_PATH}) and no rows: nothing proves "
                    "it was always empty (a writer can delete every row and the head); this "
                    "viewer has seen no head of it before",
                    HEAD_PATH,
                )
            )
        return state
    try:
        head = parse_head(data)
    except StoreError as exc:
        state.problems.append(SetProblem("head-unreadable", exc.message, HEAD_PATH))
        return state
    state.head = head
    key, problem = _head_key(head, trust)
    if key is None or problem is not None:
        state.problems.append(problem or SetProblem("head-unknown-key", head.describe()))
        return state
    try:
        verify_head(head, key.public_key)
    except SignatureError as exc:
        state.problems.append(
            SetProblem(
                "head-bad-signature",
                f"{head.describe()} does not match its signature (altered): {exc.message}",
                HEAD_PATH,
            )
        )
        return state
    state.sound = True
    rewound = _rewound(head, remembered)
    if rewound is not None:
        state.problems.append(rewound)
    stale = _stale(head, max_age_days, now or datetime.now(UTC))
    if stale is not None:
        state.problems.append(stale)
    state.remember = rewound is None
    return state


def compare_set(
    state: HeadState, raw: list[RawRecord]
) -> tuple[list[SetProblem], set[str], set[str]]:
    """The files of ``raw`` against the sound head's leaves: (problems, paths listed as
    they are, paths not listed)."""
    leaves = state.leaves
    problems: list[SetProblem] = []
    as_listed: set[str] = set()
    unlisted: set[str] = set()
    present = {item.path: item for item in raw}
    version = state.head.version if state.head is not None else 0
    for path, leaf in leaves.items():
        if path.startswith(BUNDLES_DIR + "/"):
            continue  # compare_bundles
        item = present.get(path)
        who = f"{leaf.get('team', '?')}/{leaf.get('entry', '?')}"
        if item is None:
            problems.append(
                SetProblem(
                    "missing",
                    f"row {who} ({path}) is listed in the signed head v{version} but is not in "
                    "the store: it was removed",
                    path,
                    leaf.get("team"),
                    leaf.get("entry"),
                )
            )
        elif item.error is not None or sha256_bytes(item.data) != leaf["sha256"]:
            problems.append(
                SetProblem(
                    "altered",
                    f"row {who} ({path}) is not the one the signed head v{version} lists "
                    "(its bytes changed)",
                    path,
                    leaf.get("team"),
                    leaf.get("entry"),
                )
            )
        else:
            as_listed.add(path)
    for path in present:
        if path not in leaves:
            unlisted.add(path)
    return problems, as_listed, unlisted


def compare_bundles(
    state: HeadState, held: dict[str, str]
) -> tuple[list[SetProblem], dict[str, str]]:
    """The bundles the store holds (``held``: sha256 -> link) against the sound head's
    bundle leaves: (problems, the links of the bundles it lists). A bundle's bytes are not
    read here (they can be large): a view that hands one out checks them
    (``leaderboard.bundles``)."""
    problems: list[SetProblem] = []
    listed: dict[str, str] = {}
    version = state.head.version if state.head is not None else 0
    named: set[str] = set()
    for path, leaf in state.leaves.items():
        if not path.startswith(BUNDLES_DIR + "/"):
            continue
        sha = bundle_sha(path.removeprefix(BUNDLES_DIR + "/"))
        if sha is None or sha != leaf["sha256"]:
            problems.append(
                SetProblem(
                    "altered",
                    f"the signed head v{version} lists {path} with sha256 {leaf['sha256']}, "
                    "which is not the name's: the bundle cannot be checked",
                    path,
                )
            )
            continue
        named.add(sha)
        if sha not in held:
            problems.append(
                SetProblem(
                    "missing",
                    f"bundle {path} is listed in the signed head v{version} but is not in "
                    "the store: it was removed",
                    path,
                )
            )
        else:
            listed[sha] = held[sha]
    for sha in sorted(set(held) - named):
        path = f"{BUNDLES_DIR}/{sha}.tar.gz"
        problems.append(
            SetProblem(
                "unlisted",
                f"bundle {path} is in the store but not in the signed head v{version}: "
                "never linked",
                path,
            )
        )
    return problems, listed
