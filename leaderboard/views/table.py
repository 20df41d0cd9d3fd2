"""The terminal leaderboard: ranked VERIFIED rows, then the rest with their reason.

Team, entry and reason come from participants (a reason can quote an engine's error), so
every cell is a ``Text`` from ``podium.untrusted``: never markup, never control codes.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from leaderboard.ranking import Board, Ranked, key_id_of, metrics_of
from leaderboard.verify import BadRow, StoreCheck
from podium.untrusted import clean, text


def _num(value: Any, fmt: str) -> str:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return format(value, fmt) if ok else "-"


def _tps(tps: Any, ci: Any) -> str:
    if not isinstance(tps, (int, float)):
        return "-"
    if isinstance(ci, list) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci):
        return f"{tps:,.1f} [{ci[0]:,.1f}, {ci[1]:,.1f}]"
    return f"{tps:,.1f}"


def rank_label(row: Ranked) -> str:
    """``3`` or, when another entry shares the rank, ``=3``."""
    return f"={row.rank}" if row.tied else str(row.rank)


def _runs(row: Ranked) -> str:
    n = len(row.entry.runs)
    return "1" if n == 1 else f"{n} (spread {row.entry.spread:.1%})"


def _date(record: dict[str, Any]) -> str:
    return clean(record.get("verified_at", ""))[:10]


def ranked_table(board: Board) -> Table:
    title = f"{board.challenge}: VERIFIED, by median TPS; '=' marks a rank shared within the noise"
    table = Table(title=text(title), title_justify="left")
    for name, justify in (
        ("#", "right"),
        ("team", "left"),
        ("entry", "left"),
        ("TPS [95% CI]", "right"),
        ("runs", "right"),
        ("PPL", "right"),
        ("cap", "right"),
        ("speed-up", "right"),
        ("key", "left"),
        ("date", "left"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in board.ranked:
        m = metrics_of(row.record)
        ci = m.get("tps_ci95") if len(row.entry.runs) == 1 else None
        cells = [
            rank_label(row),
            row.record.get("team"),
            row.record.get("entry"),
            _tps(row.entry.tps, ci),
            _runs(row),
            _num(m.get("ppl"), ".3f"),
            _num(m.get("ppl_cap"), ".3f"),
            _num(m.get("speedup"), ".2f")
            + ("x" if isinstance(m.get("speedup"), (int, float)) else ""),
            key_id_of(row.record) or "unchecked",
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


def unverified_table(bad: list[BadRow]) -> Table:
    title = "UNVERIFIED: not ranked, not counted (the rows' own numbers are not shown)"
    table = Table(title=text(title), title_justify="left")
    for name in ("problem", "team", "entry", "path", "reason"):
        table.add_column(name, overflow="fold" if name in ("reason", "path") else "ellipsis")
    for b in bad:
        cells = [b.kind, b.team or "?", b.entry or "?", b.path, b.problem]
        table.add_row(*(text(c) for c in cells))
    return table


def render(boards: list[Board], con: Console, check: StoreCheck | None = None) -> None:
    if check is not None:
        style = (
            "green" if check.checked and check.ok else "bold red" if not check.checked else "yellow"
        )
        con.print(text(check.summary(), style=style))
        for problem in check.set_problems:
            con.print(text(problem.line(), style="bold red"))
    if not boards and not (check and (check.bad or check.withdrawn)):
        con.print("no records in this store yet")
        return
    for board in boards:
        if board.ranked:
            con.print(ranked_table(board))
        else:
            con.print(text(f"{board.challenge}: no VERIFIED entry yet"))
        if board.others:
            con.print(others_table(board))
    if check is not None and check.bad:
        con.print(unverified_table(check.bad))
    for gone in check.withdrawn if check is not None else []:
        con.print(text(gone.line(), style="yellow"))
