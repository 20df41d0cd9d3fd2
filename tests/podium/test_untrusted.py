"""Text from participants and engines cannot steer the terminal or Rich."""

from __future__ import annotations

import io

from rich.console import Console

from podium.untrusted import clean, markup, text

HOSTILE = (
    "[/]oops [bold red]x\x1b[31mred\x1b[0m\r\x08:smile: \u202eevil <img src=x onerror=alert(1)>"
)


def _render(*items: object) -> str:
    buf = io.StringIO()
    con = Console(
        file=buf,
        width=200,
        color_system="truecolor",
        force_terminal=True,
        emoji=False,
        highlight=False,
    )
    con.print(*items)
    return buf.getvalue()


def test_clean_shows_control_characters_and_bidi_overrides_as_escapes() -> None:
    out = clean(HOSTILE)
    assert "\x1b" not in out and "\r" not in out and "\x08" not in out and "\u202e" not in out
    assert "\\x1b[31mred" in out and "\\x0d" in out and "\\x08" in out and "\\u202e" in out
    assert clean("a\nb\tc") == "a\\x0ab\\x09c"
    assert clean("a\nb\tc\x1b", multiline=True) == "a\nb\tc\\x1b"
    assert clean(None) == "" and clean(3.5) == "3.5"


def test_text_is_printed_literally_never_as_markup() -> None:
    out = _render(text(HOSTILE))
    assert "[/]oops [bold red]x" in out
    assert "\x1b[31mred" not in out  # the engine's own colour code never reaches the terminal
    assert ":smile:" in out  # no emoji substitution


def test_markup_escapes_inside_our_own_markup() -> None:
    out = _render(f"[green]ok[/] {markup(HOSTILE)}")
    assert "[/]oops [bold red]x" in out
    assert out.count("\x1b[1;31m") == 0  # the hostile [bold red] did not restyle anything
