"""Output for humans and machines.

``--json`` prints one JSON document on stdout and nothing else; otherwise rich renders
tables and colour, which vanish when stdout is not a terminal. Errors are one line on
stderr plus a hint line (or a JSON ``{"error": ...}`` document with ``--json``).

Text from participants and engines reaches the console only through ``podium.untrusted``
(``text`` for a literal ``Text``, ``markup`` inside a markup string); the console itself
never turns ``:name:`` into emoji. Every boxed table it prints goes through
``podium.cli.fit``: at any width no number, label or id is cut, and below the width a
table needs it prints as ``label: value`` lines.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console

from podium.cli.fit import fit
from podium.errors import PodiumError
from podium.untrusted import markup

_state: dict[str, bool] = {"json": False}


class FittingConsole(Console):
    """A console whose ``print`` draws each boxed table with ``fit`` (nothing cut)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(fit(o) for o in objects), **kwargs)


def console(stderr: bool = False) -> Console:
    """A rich console; off a terminal it is plain, never wraps a line (a pipe or a file gets
    each line whole), and draws tables as wide as ``COLUMNS`` (default 120)."""
    stream = sys.stderr if stderr else sys.stdout
    tty = stream.isatty()
    width = None if tty else int(os.environ.get("COLUMNS") or 120)
    return FittingConsole(
        stderr=stderr, highlight=False, soft_wrap=not tty, width=width, emoji=False
    )


def set_json(enabled: bool) -> None:
    _state["json"] = enabled


def json_mode() -> bool:
    return _state["json"]


def emit(
    data: Any, human: Callable[[Console], None] | None = None, *, as_json: bool = False
) -> None:
    """Print ``data`` as JSON (``--json``) or call ``human`` with a console."""
    if as_json or json_mode() or human is None:
        sys.stdout.write(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
        sys.stdout.flush()
        return
    human(console())


def quoted(path: object) -> str:
    """``path`` as a shell word, for a command line a person copies (``next: ...``)."""
    return shlex.quote(str(path))


def emit_line(data: Any) -> None:
    """One compact JSON line on stdout, flushed (a server saying where it listens)."""
    sys.stdout.write(json.dumps(data, separators=(",", ":"), default=str) + "\n")
    sys.stdout.flush()


def error_document(exc: PodiumError) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "type": type(exc).__name__,
        "message": exc.message,
        "where": exc.where,
        "hint": exc.hint,
        "exit_code": exc.exit_code,
    }
    finding_id = getattr(exc, "finding_id", None)
    if finding_id:
        doc["finding_id"] = finding_id
    for extra in ("retry_after", "next_slot"):  # a competition server's 429
        if getattr(exc, extra, None) is not None:
            doc[extra] = getattr(exc, extra)
    errors = getattr(exc, "errors", None)
    if errors:
        doc["errors"] = [
            {"where": e.where, "message": e.message, "expected": getattr(e, "expected", None)}
            for e in errors
        ]
    return {"error": doc}


def print_error(exc: PodiumError) -> None:
    if json_mode():
        sys.stdout.write(json.dumps(error_document(exc), indent=2) + "\n")
        return
    err = console(stderr=True)
    err.print(f"[bold red]error:[/] {markup(exc)}")
    for sub in getattr(exc, "errors", [])[1:]:
        err.print(f"       {markup(sub)}")
    if exc.hint:
        err.print(f"[dim]hint:[/] {markup(exc.hint)}")
