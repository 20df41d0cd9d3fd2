"""How rows are ordered: the one ranking rule shared by the table, exports and checks.

Per challenge, VERIFIED rows are ranked by median TPS, highest first; a tie goes to the
row verified first (then the record id, so the order never depends on file order). By
default each team keeps its best VERIFIED row. Every other row (UNOFFICIAL, PENDING,
REJECTED, FAILED) is listed apart, newest first within each verdict, with its reason.
The web page's JavaScript applies the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

OTHER_ORDER = ("UNOFFICIAL", "PENDING", "REJECTED", "FAILED")


@dataclass(frozen=True)
class Ranked:
    rank: int
    record: dict[str, Any]


@dataclass(frozen=True)
class Board:
    """The leaderboard of one challenge."""

    challenge: str
    ranked: list[Ranked] = field(default_factory=list)
    others: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "challenge": self.challenge,
            "ranked": [{"rank": r.rank, **row_summary(r.record)} for r in self.ranked],
            "others": [row_summary(r) for r in self.others],
        }


def tps_of(record: dict[str, Any]) -> float:
    value = (record.get("metrics") or {}).get("tps")
    return float(value) if isinstance(value, (int, float)) else float("-inf")


def rank_key(record: dict[str, Any]) -> tuple[float, str, str]:
    return (-tps_of(record), str(record.get("verified_at", "")), str(record.get("record_id", "")))


def row_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The flat view of a record used by ``show --json`` and the exports."""
    m = record.get("metrics") or {}
    return {
        "record_id": record.get("record_id"),
        "challenge": (record.get("challenge") or {}).get("id"),
        "challenge_version": (record.get("challenge") or {}).get("version"),
        "team": record.get("team"),
        "entry": record.get("entry"),
        "verdict": record.get("verdict"),
        "reason": record.get("reason", ""),
        "tps": m.get("tps"),
        "tps_ci95": m.get("tps_ci95"),
        "ppl": m.get("ppl"),
        "ppl_cap": m.get("ppl_cap"),
        "speedup": m.get("speedup"),
        "verified_at": record.get("verified_at"),
    }


def build_boards(
    records: list[dict[str, Any]], *, challenge: str | None = None, best_per_team: bool = True
) -> list[Board]:
    """One ``Board`` per challenge (sorted by id), or only ``challenge``'s."""
    by_challenge: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        cid = str((rec.get("challenge") or {}).get("id", "?"))
        if challenge is None or cid == challenge:
            by_challenge.setdefault(cid, []).append(rec)
    boards = []
    for cid in sorted(by_challenge):
        rows = by_challenge[cid]
        verified = sorted((r for r in rows if r.get("verdict") == "VERIFIED"), key=rank_key)
        if best_per_team:
            seen: set[str] = set()
            best = []
            for r in verified:
                if r.get("team") not in seen:
                    seen.add(str(r.get("team")))
                    best.append(r)
            verified = best
        others = [r for r in rows if r.get("verdict") != "VERIFIED"]
        others.sort(key=lambda r: str(r.get("verified_at", "")), reverse=True)
        others.sort(
            key=lambda r: OTHER_ORDER.index(r["verdict"]) if r.get("verdict") in OTHER_ORDER else 9
        )
        boards.append(Board(cid, [Ranked(i + 1, r) for i, r in enumerate(verified)], others))
    return boards
