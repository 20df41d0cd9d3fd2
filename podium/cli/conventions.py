"""The help conventions people bring from ``hf``, docker and vLLM, applied to the whole tree.

- ``-h`` beside ``--help`` everywhere;
- the top-level help lists commands by role (participant, organizer, viewer), as the
  README does, and every list of commands shows each summary uncut;
- placeholders are argparse-style METAVARs (``DIR``, ``--out OUT``), never ``{dir}`` or
  a Python type such as ``<list[str]>``.

Applied once to typer's click tree (``apply``) so that no command has to remember them.
"""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperArgument, TyperGroup, TyperOption

HELP_OPTIONS = {"help_option_names": ["--help", "-h"]}

#: The top-level commands by role, in the README's order; any other goes under "more".
ROLES: dict[str, tuple[str, ...]] = {
    "participant": ("submission", "engine", "challenge"),
    "organizer": (
        "verify",
        "keys",
        "report",
        "heldout",
        "server",
        "competition",
        "queue",
        "worker",
        "dispatch",
    ),
    "viewer": ("leaderboard",),
    "documents": ("schema",),
}


def summary(help_text: str | None) -> str:
    """The first sentence of a help text, on one line, uncut."""
    first = " ".join(inspect.cleandoc(help_text or "").split("\n\n")[0].split())
    head, dot, _ = first.partition(". ")
    return head + "." if dot else first


def keep_examples(help_text: str) -> str:
    """Mark indented paragraphs (command examples) so that click prints them unwrapped."""
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    return "\n\n".join(
        "\b\n" + p if p.startswith((" ", "\t")) and not p.startswith("\b") else p
        for p in paragraphs
    )


class RoleGroup(TyperGroup):
    """The root group: commands listed by role, summaries uncut."""

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        names = [n for n in self.list_commands(ctx) if not self.commands[n].hidden]
        placed: set[str] = set()
        for role, members in ROLES.items():
            rows = [(n, self.commands[n].get_short_help_str()) for n in members if n in names]
            placed.update(n for n, _ in rows)
            if rows:
                with formatter.section(
                    f"Commands for the {role}" if role != "documents" else "Commands for documents"
                ):
                    formatter.write_dl(rows)
        rest = [(n, self.commands[n].get_short_help_str()) for n in names if n not in placed]
        if rest:
            with formatter.section("More commands"):
                formatter.write_dl(rest)


class _Argument(TyperArgument):
    """An argument shown as its METAVAR in the usage line (``DIR``, ``[DIR]``)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the METAVAR says it; never a Python type

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")


def _metavar(param: Any) -> str:
    desc = getattr(param, "type_descriptor", None)
    choices = desc.choices if desc is not None and desc.is_choice else None
    if choices:
        return "[" + "|".join(str(getattr(c, "value", c)) for c in choices) + "]"
    return str(param.name or "value").upper()


def apply(command: Any) -> Any:
    """Apply the conventions to ``command`` and every command under it; return it."""
    if command.help:
        if not command.short_help:
            command.short_help = summary(command.help)
        command.help = keep_examples(command.help)
    for param in command.params:
        if isinstance(param, TyperArgument):
            if param.metavar is None:
                param.metavar = _metavar(param)
            param.__class__ = _Argument
        elif isinstance(param, TyperOption) and not param.is_flag and param.metavar is None:
            param.metavar = _metavar(param)
    for sub in getattr(command, "commands", {}).values():
        apply(sub)
    return command
