"""A Dockerfile read as Docker's builder reads it, for what it tells the engine.

``instructions`` splits a Dockerfile into instructions with the line each starts on:
the parser directive ``# escape=`` (a backslash or a backtick), comments (also inside a
continued instruction), empty continuation lines and line continuations are honoured as
BuildKit's parser does. ``env_pairs`` reads an ``ENV`` as Docker does: the ``KEY=value``
form with any number of pairs, double and single quotes, the escape character, and the
legacy ``ENV KEY value with spaces`` form. ``command`` reads a ``CMD`` or ``ENTRYPOINT``:
the exec form (a JSON array of strings) or the shell form (words as ``sh -c`` splits
them). Variables (``$VAR``, ``${VAR}``) are substituted from the file's own earlier
``ARG`` defaults and ``ENV`` values, as the builder substitutes them in ``ENV``.

Nothing is run and nothing is guessed: a line this module cannot read is a
``DockerfileError`` naming the line.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass

from podium.errors import UsageError

_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$")
_INSTRUCTION = re.compile(r"^([A-Za-z]+)(?:\s+(.*))?$", re.S)
_VARIABLE = re.compile(
    r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?[-+][^}]*)?\}|([A-Za-z_][A-Za-z0-9_]*))"
)


class DockerfileError(UsageError):
    """A Dockerfile line that cannot be read as Docker would read it."""


@dataclass(frozen=True)
class Instruction:
    """One instruction: its name (upper case), its arguments as one string (continuations
    joined), and the line of the file it starts on (1-based)."""

    name: str
    args: str
    line: int


def instructions(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile, in order."""
    lines = text.splitlines()
    escape = "\\"
    start = 0
    for index, raw in enumerate(lines):  # parser directives: only at the very top
        match = _DIRECTIVE.match(raw.strip())
        if match is None:
            break
        if match[1].lower() == "escape":
            if match[2] not in ("\\", "`"):
                raise DockerfileError(f"line {index + 1}: escape must be \\ or `, not {match[2]}")
            escape = match[2]
        start = index + 1
    out: list[Instruction] = []
    pending: list[str] = []
    first = 0
    for index in range(start, len(lines)):
        raw = lines[index]
        stripped = raw.strip()
        if stripped.startswith("#"):
            continue  # a comment, also between the lines of a continued instruction
        if not stripped:
            continue  # an empty line, also one inside a continuation
        if not pending:
            first = index + 1
        body = raw.rstrip()
        if body.endswith(escape) and not body.endswith(escape * 2):
            pending.append(body[: -len(escape)])
            continue
        pending.append(body)
        out.append(_instruction(" ".join(p.strip() for p in pending), first))
        pending = []
    if pending:
        out.append(_instruction(" ".join(p.strip() for p in pending), first))
    return out


def _instruction(whole: str, line: int) -> Instruction:
    match = _INSTRUCTION.match(whole)
    if match is None:
        raise DockerfileError(f"line {line}: {whole[:60]!r} is not an instruction")
    return Instruction(match[1].upper(), (match[2] or "").strip(), line)


def _words(args: str, escape: str = "\\") -> list[str]:
    """``args`` split into words as Docker splits an ENV: whitespace outside quotes ends a
    word; double quotes keep escapes of ``"``, ``$`` and the escape character; single
    quotes keep everything; the escape character outside quotes escapes the next one."""
    words: list[str] = []
    word: list[str] = []
    quote: str | None = None
    started = False
    i = 0
    while i < len(args):
        ch = args[i]
        if quote is None and ch.isspace():
            if started:
                words.append("".join(word))
                word, started = [], False
            i += 1
            continue
        started = True
        if quote is None and ch in "\"'":
            quote = ch
        elif quote is not None and ch == quote:
            quote = None
        elif ch == escape and quote != "'" and i + 1 < len(args):
            following = args[i + 1]
            if quote == '"' and following not in ('"', "$", escape):
                word.append(ch)  # inside double quotes only these are escaped
            else:
                word.append(following)
                i += 1
        else:
            word.append(ch)
        i += 1
    if quote is not None:
        raise DockerfileError(f"unterminated {quote} quote in {args[:60]!r}")
    if started:
        words.append("".join(word))
    return words


def substitute(value: str, known: dict[str, str]) -> str:
    """``$VAR`` and ``${VAR}`` replaced from ``known``; an unknown one is left as written."""

    def one(match: re.Match[str]) -> str:
        name = match[1] or match[2]
        return known.get(name, match[0])

    return _VARIABLE.sub(one, value)


def env_pairs(args: str, known: dict[str, str] | None = None) -> dict[str, str]:
    """The variables one ``ENV`` sets, in order, with ``known`` (earlier ``ARG`` and
    ``ENV`` values) substituted as the builder substitutes them."""
    known = dict(known or {})
    words = _words(args)
    if not words:
        raise DockerfileError("ENV sets nothing")
    if "=" not in words[0]:  # the legacy form: ENV KEY the rest of the line
        key, _, rest = args.strip().partition(" ")
        if not rest.strip():
            raise DockerfileError(f"ENV {key} has no value")
        return {key: substitute(" ".join(_words(rest)), known)}
    pairs: dict[str, str] = {}
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise DockerfileError(f"ENV {args[:60]!r}: {word!r} is not KEY=value")
        pairs[key] = substitute(value, {**known, **pairs})
    return pairs


def command(args: str) -> list[str]:
    """The words of a ``CMD`` or ``ENTRYPOINT``: its exec form (a JSON array of strings),
    else its shell form split as ``sh -c`` would split it."""
    text = args.strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise DockerfileError(f"cannot read {text[:60]!r}: {exc}") from None


@dataclass(frozen=True)
class Setting:
    """A variable or argument the image gives its engine: its name, its value as text,
    and where (``Dockerfile:LINE ENV`` / ``Dockerfile:LINE CMD``)."""

    name: str
    value: str
    where: str


#: the baseline engine's command-line options that set a knob (``--sliding-window``)
def _option_knob(option: str) -> str:
    return option.removeprefix("--").replace("-", "_").upper()


def image_settings(text: str, *, file: str = "Dockerfile") -> tuple[list[Setting], list[str]]:
    """What the image sets for its engine: every ``ENV`` variable (the last stage's, with
    earlier values substituted), and the ``--option value`` / ``--option=value`` words of
    its ``CMD`` and ``ENTRYPOINT`` (as upper-case knob names), each with where it is set;
    and the command the image runs (``ENTRYPOINT`` then ``CMD``)."""
    known: dict[str, str] = {}
    settings: dict[str, Setting] = {}
    entrypoint: list[str] = []
    cmd: list[str] = []
    cmd_line = entry_line = 0
    for step in instructions(text):
        if step.name == "FROM":  # a new stage starts with nothing of the last one's ENV
            known, settings, entrypoint, cmd = {}, {}, [], []
        elif step.name == "ARG":
            for word in _words(step.args):
                key, sep, value = word.partition("=")
                if sep:
                    known.setdefault(key, substitute(value, known))
        elif step.name == "ENV":
            for key, value in env_pairs(step.args, known).items():
                known[key] = value
                settings[key] = Setting(key, value, f"{file}:{step.line} ENV")
        elif step.name == "CMD":
            cmd, cmd_line = command(step.args), step.line
        elif step.name == "ENTRYPOINT":
            entrypoint, entry_line = command(step.args), step.line
            cmd = []  # an ENTRYPOINT resets the CMD of the stage's base
    out = list(settings.values())
    for words, line, what in ((entrypoint, entry_line, "ENTRYPOINT"), (cmd, cmd_line, "CMD")):
        i = 0
        while i < len(words):
            word = words[i]
            if word.startswith("--") and len(word) > 2:
                option, sep, value = word.partition("=")
                if not sep and i + 1 < len(words) and not words[i + 1].startswith("--"):
                    value, i = words[i + 1], i + 1
                if sep or value:
                    out.append(Setting(_option_knob(option), value, f"{file}:{line} {what}"))
            i += 1
    return out, [*entrypoint, *cmd]
