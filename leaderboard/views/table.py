"""The terminal leaderboard: ranked VERIFIED rows, then the rest with their reason.

Team, entry and reason come from participants (a reason can quote an engine's error), so
every cell is a ``Text`` from ``podium.untrusted``: never markup, never control codes.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from leaderboard.ranking import Board
from podium.untrusted import clean, text


def _num(value: Any, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, (int, float)) else "-"


def _tps(metrics: dict[str, Any]) -> str:
    tps, ci = metrics.get("tps"), metrics.get("tps_ci95")
    if not isinstance(tps, (int, float)):
        return "-"
    if isinstance(ci, list) and len(ci) == 2:
        return f"{tps:,.1f} [{ci[0]:,.1f}, {ci[1]:,.1f}]"
    return f"{tps:,.1f}"


def _date(record: dict[str, Any]) -> str:
    return clean(record.get("verified_at", ""))[:10]


def ranked_table(board: Board) -> Table:
    table = Table(title=text(f"{board.challenge}: VERIFIED, ranked by TPS"), title_justify="left")
    for name, justify in (
        ("#", "right"),
        ("team", "left"),
        ("entry", "left"),
        ("TPS [95% CI]", "right"),
        ("PPL", "right"),
        ("cap", "right"),
        ("speed-up", "right"),
        ("date", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in board.ranked:
        m = row.record.get("metrics") or {}
        cells = [
            str(row.rank),
            row.record.get("team"),
            row.record.get("entry"),
            _tps(m),
            _num(m.get("ppl"), ".3f"),
            _num(m.get("ppl_cap"), ".3f"),
            _num(m.get("speedup"), ".2f")
            + ("x" if isinstance(m.get("speedup"), (int, float)) else ""),
            _date(row.record),
        ]
        table.add_row(*(text(c) for c in cells))
    return table


def others_table(board: Board) -> Table:
    table = Table(title=text(f"{board.challenge}: not ranked"), title_justify="left")
    for name in ("verdict", "team", "entry", "reason", "date"):
        table.add_column(name, overflow="fold" if name == "reason" else "ellipsis")
    for rec in board.others:
        cells = [rec.get("verdict"), rec.get("team"), rec.get("entry"), rec.get("reason") or "-"]
        table.add_row(*(text(c) for c in [*cells, _date(rec)]))
    return table


def render(boards: list[Board], con: Console) -> None:
    if not boards:
        con.print("no records in this store yet")
        return
    for board in boards:
        if board.ranked:
            con.print(ranked_table(board))
        else:
            con.print(text(f"{board.challenge}: no VERIFIED entry yet"))
        if board.others:
            con.print(others_table(board))
