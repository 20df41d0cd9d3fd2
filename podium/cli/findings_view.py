"""Findings on the console, and the one way a participant's command ends: its findings,
then ``ok`` and the next step, or exit 1 when an error stopped it."""

from __future__ import annotations

from typing import Any

import typer
from rich.console import Console
from rich.text import Text

from podium.cli.output import emit
from podium.errors import EXIT_FINDINGS
from podium.untrusted import text
from schemas.findings import Finding, errors_in


def count_line(findings: list[Finding]) -> str:
    """``2 errors, 1 warning``: the counts of what follows, by severity."""
    errors = len(errors_in(findings))
    warnings = sum(1 for f in findings if f.severity == "warning")
    parts = [f"{errors} error" + ("s" if errors != 1 else "")] if errors else []
    if warnings:
        parts.append(f"{warnings} warning" + ("s" if warnings != 1 else ""))
    return ", ".join(parts)


def print_findings(con: Console, findings: list[Finding]) -> None:
    """One row per finding, its severity first: ``error [id] where: message``, the hint
    under it. Two columns, so that at any width a long message wraps under its own start
    (a hanging indent), never back to column 0."""
    for f in findings:
        line = Text(f"[{f.check_id}]")
        if f.where:
            line.append_text(text(f" {f.where}"))
        line.append(": ")
        line.append_text(text(f.message))
        severity = Text(f"  {f.severity:<7} ", style="red" if f.is_error else "yellow")
        print_hanging(con, severity, line)
        if f.hint:
            print_hanging(con, Text(" " * INDENT), text(f"hint: {f.hint}", "dim"))


#: where a finding's text starts: after ``  warning `` (two spaces, the longest severity, one)
INDENT = 10


def print_hanging(con: Console, head: Text, body: Text) -> None:
    """``head`` then ``body``, the body wrapped to the console's width under its own first
    column (a hanging indent); as one line where output is not wrapped (a pipe: the console
    soft-wraps) or on a console too narrow for the indent."""
    width = con.width - INDENT
    if con.soft_wrap or width < 20:
        con.print(Text.assemble(head, body), soft_wrap=True)
        return
    for i, part in enumerate(body.wrap(con, width)):
        part.rstrip()
        con.print(Text.assemble(head if i == 0 else " " * INDENT, part), soft_wrap=True)


def finish(
    data: dict[str, Any], findings: list[Finding], ok_line: str, next_step: str | None = None
) -> None:
    """Print findings, then ``ok_line`` and ``next_step`` unless an error stopped it (exit 1)."""

    def human(con: Console) -> None:
        errors = errors_in(findings)
        if findings:
            con.print(Text(f"{count_line(findings)}:", style="red" if errors else "yellow"))
        print_findings(con, findings)
        if errors:
            con.print("next: fix the problems above and run the command again")
            return
        con.print(Text.assemble(("ok ", "green"), text(ok_line, multiline=True)))
        if next_step:
            con.print(Text.assemble("next: ", text(next_step)))

    emit(data, human)
    if errors_in(findings):
        raise typer.Exit(EXIT_FINDINGS)
