"""Reading ``podium.toml`` past its syntax errors, so that validate finds everything.

``tomllib`` stops at the first error. ``parse_salvaging`` names that line (with a hint
for the error it is: quotes for a bare word, an inline table for pasted JSON), sets it
aside and parses the rest again, up to ``MAX_PARSE_ERRORS`` times: the lines that parse
are then judged like any other file, and the directory around it (the Dockerfile, the
files) is judged either way.
"""

from __future__ import annotations

import re
import tomllib
from typing import Any

from schemas.check_ids import SUBMISSION_CONFIG_PARSE
from schemas.findings import Finding
from submission.defaults import CONFIG_FILE

#: What a TOML error's message says, and the hint that fits it.
_PARSE_HINTS = (
    ("Cannot declare", "a [table] is declared twice: merge the two into one"),
    ("Cannot overwrite", "a key is set twice in the same table: keep one"),
    ("Unterminated string", "close the string's quotes on the same line"),
    ('Expected "\'"', "close the string's quotes on the same line"),
    (
        "Expected newline or end of document",
        'one KEY = value per line; a value with spaces is a "quoted string"',
    ),
)


def _parse_hint(message: str, line: str) -> str:
    """The hint for a TOML error at ``line``: what most likely went wrong there."""
    value = line.partition("=")[2].strip()
    if re.search(r'[{\[]\s*"[^"]*"\s*:', line):
        return (
            'this looks like JSON: TOML\'s inline table is { method = "mtp", '
            "num_speculative_tokens = 7 }, or keep the JSON as text in single quotes: "
            'KEY = \'{"method": "mtp"}\''
        )
    for needle, hint in _PARSE_HINTS:
        if needle in message:
            return hint
    if "Invalid value" in message and re.fullmatch(r"[A-Za-z_][\w.\-/:]*", value or "-"):
        return f'TOML strings need quotes: write "{value}"'
    if "Expected '='" in message:
        return "each line is KEY = value, a [table] header or a # comment"
    return "fix the line it names (TOML's syntax: https://toml.io/en/v1.0.0)"


def _error_line(exc: tomllib.TOMLDecodeError, rows: list[str]) -> int:
    """The 1-based line a TOML error is about: the one it names, else (an error "at end
    of document", such as a string never closed) the first line after the longest start
    of the file that parses."""
    m = re.search(r"at line (\d+)", str(exc))
    if m:
        return int(m[1])
    for count in range(len(rows), -1, -1):
        try:
            tomllib.loads("\n".join(rows[:count]))
        except tomllib.TOMLDecodeError:
            continue
        return min(count + 1, max(len(rows), 1))
    return 1


#: How many broken lines a file may have before podium stops looking past them.
MAX_PARSE_ERRORS = 10


def parse_salvaging(text: str) -> tuple[dict[str, Any] | None, list[Finding], set[int]]:
    """``text`` parsed as TOML; where it does not parse, each broken line is a finding and
    is set aside, and the rest is parsed again, so that what the other lines say can still
    be judged. Returns (the document of the lines that parse, or None; the findings; the
    lines set aside)."""
    rows = text.splitlines()
    findings: list[Finding] = []
    dropped: set[int] = set()
    while True:
        try:
            return tomllib.loads("\n".join(rows)), findings, dropped
        except tomllib.TOMLDecodeError as exc:
            number = _error_line(exc, rows)
            bad = rows[number - 1] if 0 < number <= len(rows) else ""
            findings.append(
                Finding(
                    SUBMISSION_CONFIG_PARSE,
                    "error",
                    f"{CONFIG_FILE} is not valid TOML: {exc}",
                    hint=_parse_hint(str(exc), bad),
                    where=f"{CONFIG_FILE}:{number}",
                )
            )
            if number in dropped or len(findings) >= MAX_PARSE_ERRORS or number > len(rows):
                return None, findings, dropped
            dropped.add(number)
            rows[number - 1] = ""
