"""Text that came from a participant or an engine, made safe to show.

Team and entry names, descriptions, error bodies, engine log tails and finding messages
that quote them are written by someone podium does not trust. Before such text reaches
a terminal it loses its power to steer it: control characters (ANSI escape sequences,
carriage returns, backspaces, the C1 range) and the Unicode bidirectional overrides are
shown as visible escapes (``\\x1b``, ``\\u202e``), and it is never parsed as Rich markup
or emoji codes. (The web page sets such text with ``textContent`` only.)

    clean(value)            the value as one safe line (newlines and tabs escaped too)
    clean(value, True)      the same, keeping newlines and tabs (log tails)
    text(value, style)      a ``rich.text.Text``: printed as it is, never as markup
    markup(value)           the value escaped for a Rich markup string
"""

from __future__ import annotations

import re

from rich.markup import escape as _escape_markup
from rich.text import Text

#: C0 and C1 controls, DEL, and the bidirectional marks and overrides ("Trojan Source").
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _visible(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(value: object, multiline: bool = False) -> str:
    """``value`` as text without characters that can steer a terminal.

    ``multiline`` keeps ``\\n`` and ``\\t`` (a log tail); everything else in the control
    ranges, and every bidirectional override, becomes a visible escape.
    """
    raw = "" if value is None else str(value)

    def swap(match: re.Match[str]) -> str:
        ch = match.group(0)
        if multiline and ch in "\n\t":
            return ch
        return _visible(ch)

    return _UNSAFE.sub(swap, raw)


def text(value: object, style: str = "", *, multiline: bool = False) -> Text:
    """A ``Text`` of the cleaned value: Rich prints it literally, with ``style``."""
    return Text(clean(value, multiline), style=style)


def markup(value: object, *, multiline: bool = False) -> str:
    """The cleaned value, escaped to sit inside a Rich markup string."""
    return _escape_markup(clean(value, multiline))
