"""Every ``podium ...`` command the README and docs/ name exists, and its options parse.

Command lines in code blocks are parsed whole, as the shell would hand them to podium
(nothing runs); commands in inline code (``podium submission validate``) are looked up
and each ``--option`` they name must be one of that command's.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from podium.cli.app import command

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
INLINE = re.compile(r"`(podium [^`]+)`")
FENCE = re.compile(r"^```")


def _block_lines(text: str) -> list[str]:
    """Lines of code blocks that run podium (continuations joined, comments cut)."""
    out, inside, pending = [], False, ""
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            inside = not inside
            continue
        if not inside:
            continue
        line = pending + line.split("  #")[0].strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        words = line.split()
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # VAR=value before the command
        if words[:1] == ["podium"]:
            out.append(" ".join(words))
    return out


def _cases() -> list[tuple[str, str, bool]]:
    cases = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        name = doc.relative_to(ROOT).as_posix()
        cases += [(name, line, True) for line in _block_lines(text)]
        cases += [(name, m[1], False) for m in INLINE.finditer(text)]
    return sorted(set(cases))


def _leaf(args: list[str]) -> tuple[Any, list[str], list[str]]:
    """The command ``args`` names, its path, and the words after it."""
    node, path = command(), ["podium"]
    while hasattr(node, "commands") and args and args[0] in node.commands:
        path.append(args[0])
        node, args = node.commands[args[0]], args[1:]
    return node, path, args


def test_the_docs_name_commands() -> None:
    assert len(_cases()) > 40


@pytest.mark.parametrize(("doc", "line", "whole"), _cases(), ids=lambda v: str(v)[:70])
def test_each_command_in_the_docs_exists_and_its_options_parse(
    doc: str, line: str, whole: bool
) -> None:
    if re.search(r"\[-", line):  # a synopsis (`[--store S]`): its options are checked
        whole = False
        line = line.replace("[", " ").replace("]", " ")
    words = shlex.split(line.replace(" | ", " \\| "))
    if "|" in words:
        words = words[: words.index("|")]
    node, path, rest = _leaf(words[1:])
    if hasattr(node, "commands"):  # a group: what follows is its commands or options
        words = re.split(r"[ /,]+", " ".join(rest))
        names = [w for w in words if re.fullmatch(r"[a-z][a-z-]*", w)]
        flags = [w for w in words if w.startswith("-")]
        own = {o for p in node.params for o in p.opts} | {"-h", "--help"}
        assert all(n in node.commands for n in names), f"{doc}: {line}"
        assert all(f in own for f in flags), f"{doc}: {line}"
        return
    options = {o for p in node.params for o in [*p.opts, *p.secondary_opts]} | {"-h", "--help"}
    named = [w.split("=")[0] for w in rest if w.startswith("-") and w != "-"]
    unknown = [o for o in named if o not in options]
    assert not unknown, f"{doc}: `{line}` names {unknown}, not options of {' '.join(path)}"
    if whole:
        ctx = node.make_context(" ".join(path), list(rest), resilient_parsing=False)
        assert ctx.params is not None
