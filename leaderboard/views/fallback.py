"""The page without JavaScript: the same ``records.json`` document as plain HTML tables.

``serve`` and ``build-site`` put it inside ``<noscript>`` in ``index.html``, so a reader
with scripts off (or a crawler) sees the trust line, the set check's warnings, each
challenge's ranked entries, the rows not ranked, the withdrawn and the unverified rows,
each with a link to its signed record. Every participant string is cleaned of control
characters (``podium.untrusted.clean``) and escaped (``html.escape``): text, never markup.
"""

from __future__ import annotations

from html import escape
from typing import Any

from podium.untrusted import clean

MARKER = "<!--podium:fallback-->"
#: rows per table: a page of 10,000 records stays small; the rest are in records.json
LIMIT = 100


def _text(value: Any) -> str:
    """Participant text for HTML: control characters as visible escapes, then escaped."""
    return escape(clean(value))


def _cell(value: Any) -> str:
    return f"<td>{_text(value)}</td>"


def _num(value: Any, digits: int) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<td class="num">{value:,.{digits}f}</td>'
    return '<td class="num">-</td>'


def record_href(record: dict[str, Any]) -> str:
    challenge = (record.get("challenge") or {}).get("id", "")
    return f"records/{challenge}/{record.get('record_id', '')}.json"


def _link(record: dict[str, Any]) -> str:
    href = escape(record_href(record), quote=True)
    return f'<td><a href="{href}">signed record</a></td>'


def _table(caption: str, head: list[str], rows: list[str], css: str) -> str:
    ths = "".join(f"<th>{escape(h)}</th>" for h in head)
    if len(rows) > LIMIT:
        caption += f" (the first {LIMIT} of {len(rows)}; every row is in records.json)"
        rows = rows[:LIMIT]
    body = "".join(rows) or f'<tr><td colspan="{len(head)}">none</td></tr>'
    return (
        f'<table class="{css}"><caption>{escape(caption)}</caption>'
        f"<thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table>"
    )


def _set_warnings(problems: list[dict[str, Any]]) -> str:
    """The set check's problems as a list, each tagged with its kind."""
    items = "".join(
        f'<li data-kind="{escape(p["kind"], quote=True)}">{_text(p["message"])}</li>'
        for p in problems
    )
    return f'<ul class="fallback-set-warnings">{items}</ul>'


def _ranked_table(challenge: str, board: dict[str, Any], by_id: dict[Any, dict[str, Any]]) -> str:
    """A challenge's ranked entries (each by its first run's record), by median TPS."""
    rows = []
    for e in board.get("best") or []:
        rec = by_id.get(e["runs"][0]) if e.get("runs") else None
        if rec is None:
            continue
        m = rec.get("metrics") or {}
        rank = ("=" if e.get("tied") else "") + str(e.get("rank"))
        rows.append(
            "<tr>"
            + _cell(rank)
            + _cell(rec.get("team"))
            + _cell(rec.get("entry"))
            + _num(e.get("tps"), 1)
            + _num(m.get("ppl"), 3)
            + _cell(str(rec.get("verified_at", ""))[:10])
            + _link(rec)
            + "</tr>"
        )
    return _table(
        f"{challenge}: VERIFIED, by median TPS",
        ["#", "team", "entry", "TPS", "PPL", "date", "record"],
        rows,
        "fallback-ranked",
    )


def _others_table(
    challenge: str, board: dict[str, Any], by_id: dict[Any, dict[str, Any]]
) -> str | None:
    """A challenge's rows not ranked, with their verdicts; None when there are none."""
    others = [by_id[i] for i in board.get("others") or [] if i in by_id]
    rows = [
        "<tr>"
        + "".join(_cell(r.get(k)) for k in ("verdict", "team", "entry", "reason"))
        + _cell(str(r.get("verified_at", ""))[:10])
        + _link(r)
        + "</tr>"
        for r in others
    ]
    if not rows:
        return None
    return _table(
        f"{challenge}: not ranked",
        ["verdict", "team", "entry", "reason", "date", "record"],
        rows,
        "fallback-others",
    )


def _withdrawn_table(gone: list[dict[str, Any]]) -> str:
    """The withdrawn entries, with the reason and date of each withdrawal."""
    rows = [
        "<tr>"
        + "".join(_cell(w.get(k)) for k in ("team", "entry", "reason"))
        + _cell(str(w.get("withdrawn_at", ""))[:10])
        + "</tr>"
        for w in gone
    ]
    return _table("Withdrawn", ["team", "entry", "reason", "withdrawn"], rows, "fallback-gone")


def _unverified_table(bad: list[dict[str, Any]]) -> str:
    """The documents that did not verify: what failed and where, never their numbers."""
    rows = [
        "<tr>"
        + "".join(_cell(b.get(k) or "?") for k in ("kind", "team", "entry", "problem", "path"))
        + "</tr>"
        for b in bad
    ]
    return _table(
        "Unverified (not ranked, numbers not shown)",
        ["problem", "team", "entry", "reason", "file"],
        rows,
        "fallback-bad",
    )


def fallback_html(doc: dict[str, Any]) -> str:
    """The ``<noscript>`` block for ``doc`` (``leaderboard.views.web.records_document``)."""
    by_id = {r.get("record_id"): r for r in doc.get("records") or []}
    parts = [f'<p class="fallback-trust">{_text(doc.get("summary", ""))}</p>']
    problems = doc.get("set_problems") or []
    if problems:
        parts.append(_set_warnings(problems))
    for challenge, board in sorted((doc.get("boards") or {}).items()):
        parts.append(_ranked_table(challenge, board, by_id))
        others = _others_table(challenge, board, by_id)
        if others is not None:
            parts.append(others)
    gone = doc.get("withdrawn") or []
    if gone:
        parts.append(_withdrawn_table(gone))
    bad = doc.get("unverified") or []
    if bad:
        parts.append(_unverified_table(bad))
    return '<noscript><section id="fallback">' + "".join(parts) + "</section></noscript>"


def page_html(template: str, doc: dict[str, Any]) -> str:
    """``index.html`` with the fallback in place of its marker."""
    return template.replace(MARKER, fallback_html(doc), 1)
