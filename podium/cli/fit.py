"""Tables that never cut a number, a label or an id, at any terminal width.

Rich shrinks a table that is wider than the terminal by squeezing its columns, down to
cells cut with an ellipsis (``TPS (m…``, ``23.4…``) or to nothing. ``fit(table)`` decides
instead, at the width it is drawn at:

- every column of labels, numbers and ids (any column not marked ``overflow="fold"``) keeps
  its widest cell on one line; a prose column (``overflow="fold"``: a summary, a reason)
  may wrap between words, never inside one, down to ``PROSE_MIN`` columns;
- when even that is wider than the terminal, the table is printed as a list of
  ``label: value`` lines, one block per row (``pairs``: a two-column table of labels and
  values prints one ``label: value`` line per row).

``output.console()`` passes every boxed table a command prints through ``fit``, so views
built elsewhere (the leaderboard's) fit too.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.table import Column, Table
from rich.text import Text

#: measuring width: wide enough that no cell wraps
_WIDE = 1 << 15
#: the narrowest a prose column may get (with its padding) before the table goes vertical:
#: narrower, a sentence becomes a column of two-word lines
PROSE_MIN = 24


def _prose(column: Column) -> bool:
    return column.overflow == "fold" and not column.no_wrap


def column_widths(console: Console, options: ConsoleOptions, table: Table) -> list[int] | None:
    """Content widths (padding left out) with which ``table`` fits ``options.max_width``
    and no cell is cut, or None when no such widths exist."""
    wide = options.update_width(_WIDE)
    # rich's own measure of a column: its cells (header included) with their padding
    ranges = [table._measure_column(console, wide, c) for c in table.columns]
    pads = [table._get_padding_width(c._index) for c in table.columns]
    prose = [_prose(c) for c in table.columns]
    least = [
        max(r.minimum, min(r.maximum, PROSE_MIN)) if p else r.maximum
        for r, p in zip(ranges, prose, strict=True)
    ]
    room = options.max_width - table._extra_width
    if sum(least) > room:
        return None
    widths = [r.maximum for r in ranges]
    excess = sum(widths) - room
    while excess > 0:  # narrow the widest prose column, never below its longest word
        i = max(
            (i for i, p in enumerate(prose) if p and widths[i] > least[i]), key=widths.__getitem__
        )
        widths[i] -= 1
        excess -= 1
    return [max(w - pad, 1) for w, pad in zip(widths, pads, strict=True)]


def _as_text(console: Console, cell: Any) -> Text | None:
    if isinstance(cell, Text):
        return cell
    if isinstance(cell, str):
        return console.render_str(cell)
    return None


def _vertical(console: Console, table: Table, pairs: bool) -> Iterable[RenderableType]:
    """``table`` as ``label: value`` lines: a block per row, its first cell first."""
    if table.title:
        title = _as_text(console, table.title)
        yield title if title is not None else table.title
    headers = [_as_text(console, c.header) or Text(str(c.header)) for c in table.columns]
    rows = list(zip(*(list(c.cells) for c in table.columns), strict=True))
    for row in rows:
        if pairs and len(row) == 2:
            label, value = (_as_text(console, cell) for cell in row)
            if label is not None and value is not None:
                yield Text.assemble(label, ": ", value)
                continue
        for index, (header, cell) in enumerate(zip(headers, row, strict=True)):
            line = Text("  " if index else "")
            label = header.copy()
            label.stylize("bold")
            line.append_text(label)
            line.append(": ")
            value = _as_text(console, cell)
            if value is None:
                yield line
                yield cell
            else:
                yield line.append_text(value)


class Fit:
    """``table`` drawn so that nothing in it is cut (see the module docstring)."""

    def __init__(self, table: Table, *, pairs: bool | None = None) -> None:
        self.table = table
        self.pairs = (len(table.columns) == 2 and not table.show_header) if pairs is None else pairs

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = column_widths(console, options, self.table)
        if widths is None:
            yield from _vertical(console, self.table, self.pairs)
            return
        fitted = copy.copy(self.table)
        fitted.columns = [
            dataclasses.replace(column, width=width, no_wrap=not _prose(column))
            for column, width in zip(self.table.columns, widths, strict=True)
        ]
        yield fitted


def fit(renderable: Any, *, pairs: bool | None = None) -> Any:
    """A boxed ``Table`` wrapped in ``Fit``; anything else (a grid, a ``Fit``) as it is."""
    if isinstance(renderable, Table) and renderable.box is not None:
        return Fit(renderable, pairs=pairs)
    return renderable
