"""How rows are ranked: the one rule shared by the table, the exports and the page.

Per challenge, VERIFIED records of one bundle (the same ``bundle_sha256``: a bundle
verified again on another host or day) form one **entry**. An entry's TPS is the median
of its runs' medians; entries are listed by it, highest first (then the earlier
verification, then the record id, so the order never depends on file order). By default
each team keeps its best entry.

**Ties.** Each entry has an interval: from the lowest of its runs' 95 % interval bounds
to the highest (a run without one counts its median), widened on each side by the
entry's noise, the larger of the challenge's stated run-to-run noise ``e`` and the
spread of its own runs' medians ``(max - min) / median``::

    low = min(ci_low) * (1 - noise)        high = max(ci_high) * (1 + noise)

An entry beats another *beyond the noise* when its low is above the other's high. Its
rank is 1 + the number of entries that beat it, so entries that cannot be told apart
share a rank (the chatbot-arena convention), and an entry is **tied** when another
shares its rank. The order stays the median's; only the number and the mark change.

Every other row (UNOFFICIAL, PENDING, REJECTED, FAILED) is listed apart, newest first
within each verdict, with its reason. The page draws what this module computes.
"""

from __future__ import annotations

import bisect
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from leaderboard.records import as_number

OTHER_ORDER = ("UNOFFICIAL", "PENDING", "REJECTED", "FAILED")


def metrics_of(record: dict[str, Any]) -> dict[str, Any]:
    m = record.get("metrics")
    return m if isinstance(m, dict) else {}


def tps_of(record: dict[str, Any]) -> float:
    value = as_number(metrics_of(record).get("tps"))
    return value if value is not None else float("-inf")


def ci_of(record: dict[str, Any]) -> tuple[float, float] | None:
    """A run's 95 % interval of TPS, or its median twice, or None without a TPS."""
    tps = as_number(metrics_of(record).get("tps"))
    if tps is None:
        return None
    ci = metrics_of(record).get("tps_ci95")
    if isinstance(ci, list) and len(ci) == 2:
        lo, hi = as_number(ci[0]), as_number(ci[1])
        if lo is not None and hi is not None:
            return min(lo, tps), max(hi, tps)
    return tps, tps


@dataclass(frozen=True)
class Entry:
    """The VERIFIED runs of one bundle, and what ranking reads from them."""

    runs: tuple[dict[str, Any], ...]
    tps: float
    low: float
    high: float
    spread: float
    noise: float

    @property
    def record(self) -> dict[str, Any]:
        """The run shown for the entry: its first verification."""
        return self.runs[0]


def make_entry(runs: list[dict[str, Any]], noise: float) -> Entry:
    """One entry from the runs of one bundle, ``noise`` being the challenge's stated one."""
    runs = sorted(runs, key=lambda r: (str(r.get("verified_at", "")), str(r.get("record_id"))))
    medians = [tps_of(r) for r in runs if as_number(metrics_of(r).get("tps")) is not None]
    if not medians:
        return Entry(tuple(runs), float("-inf"), float("-inf"), float("-inf"), 0.0, noise)
    tps = statistics.median(medians)
    spread = (max(medians) - min(medians)) / tps if tps > 0 else 0.0
    wide = max(noise, spread)
    cis = [c for c in (ci_of(r) for r in runs) if c is not None]
    low = min(c[0] for c in cis) * (1 - wide)
    high = max(c[1] for c in cis) * (1 + wide)
    return Entry(tuple(runs), tps, low, high, spread, wide)


def entry_key(entry: Entry) -> tuple[float, str, str]:
    r = entry.record
    return (-entry.tps, str(r.get("verified_at", "")), str(r.get("record_id", "")))


@dataclass(frozen=True)
class Ranked:
    rank: int
    entry: Entry
    tied: bool = False

    @property
    def record(self) -> dict[str, Any]:
        return self.entry.record


def rank_entries(entries: list[Entry]) -> list[Ranked]:
    """``entries`` in median order, each with 1 + the number that beat it beyond the noise.

    Sorting the lows makes it O(n log n): the entries that beat one are those whose low
    is above its high.
    """
    ordered = sorted(entries, key=entry_key)
    lows = sorted(e.low for e in ordered)
    ranks = [1 + len(lows) - bisect.bisect_right(lows, e.high) for e in ordered]
    shared = Counter(ranks)
    return [Ranked(n, e, shared[n] > 1) for n, e in zip(ranks, ordered, strict=True)]


@dataclass(frozen=True)
class Board:
    """The leaderboard of one challenge."""

    challenge: str
    ranked: list[Ranked] = field(default_factory=list)
    others: list[dict[str, Any]] = field(default_factory=list)
    noise: float = 0.0
    noise_source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "challenge": self.challenge,
            "noise": self.noise,
            "noise_source": self.noise_source,
            "ranked": [ranked_summary(r) for r in self.ranked],
            "others": [row_summary(r) for r in self.others],
        }


def key_id_of(record: dict[str, Any]) -> str | None:
    sig = record.get("signature")
    kid = sig.get("key_id") if isinstance(sig, dict) else None
    return kid if isinstance(kid, str) else None


def row_summary(record: dict[str, Any]) -> dict[str, Any]:
    """The flat view of a record used by ``show --json`` and the exports."""
    m = metrics_of(record)
    found = record.get("challenge")
    ch: dict[str, Any] = found if isinstance(found, dict) else {}
    return {
        "record_id": record.get("record_id"),
        "challenge": ch.get("id"),
        "challenge_version": ch.get("version"),
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
        "key_id": key_id_of(record),
    }


def ranked_summary(r: Ranked) -> dict[str, Any]:
    e = r.entry
    return {
        "rank": r.rank,
        "tied": r.tied,
        **row_summary(e.record),
        "tps": e.tps,
        "interval": [e.low, e.high],
        "noise": e.noise,
        "spread": e.spread,
        "runs": [
            {
                "record_id": run.get("record_id"),
                "tps": metrics_of(run).get("tps"),
                "tps_ci95": metrics_of(run).get("tps_ci95"),
                "verified_at": run.get("verified_at"),
                "key_id": key_id_of(run),
            }
            for run in e.runs
        ],
    }


def _entries(verified: list[dict[str, Any]], noise: float) -> list[Entry]:
    by_bundle: dict[str, list[dict[str, Any]]] = {}
    for r in verified:
        by_bundle.setdefault(str(r.get("bundle_sha256") or r.get("record_id")), []).append(r)
    return [make_entry(runs, noise) for runs in by_bundle.values()]


def build_boards(
    records: list[dict[str, Any]],
    *,
    challenge: str | None = None,
    best_per_team: bool = True,
    noise: dict[str, tuple[float, str | None]] | None = None,
) -> list[Board]:
    """One ``Board`` per challenge (sorted by id), or only ``challenge``'s.

    ``noise`` maps a challenge id to its stated run-to-run noise and where that number
    comes from; a challenge missing there is ranked on its measured intervals alone.
    """
    by_challenge: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        ch = rec.get("challenge")
        cid = str(ch.get("id", "?")) if isinstance(ch, dict) else "?"
        if challenge is None or cid == challenge:
            by_challenge.setdefault(cid, []).append(rec)
    boards = []
    for cid in sorted(by_challenge):
        rows = by_challenge[cid]
        stated, source = (noise or {}).get(cid, (0.0, None))
        entries = sorted(
            _entries([r for r in rows if r.get("verdict") == "VERIFIED"], stated), key=entry_key
        )
        if best_per_team:
            seen: set[str] = set()
            best = []
            for e in entries:
                team = str(e.record.get("team"))
                if team not in seen:
                    seen.add(team)
                    best.append(e)
            entries = best
        others = [r for r in rows if r.get("verdict") != "VERIFIED"]
        others.sort(key=lambda r: str(r.get("verified_at", "")), reverse=True)
        others.sort(
            key=lambda r: OTHER_ORDER.index(r["verdict"]) if r.get("verdict") in OTHER_ORDER else 9
        )
        boards.append(Board(cid, rank_entries(entries), others, stated, source))
    return boards
