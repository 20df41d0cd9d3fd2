"""Python dependencies of a submission, read from an optional ``requirements.txt``.

Each requirement becomes a manifest ``Dependency``: ``name``, ``version`` when it is
pinned with ``==``, its ``--hash`` entries, and ``spec`` (the requirement as written,
without hashes), so the rebuild installs exactly what the participant froze. pip
options other than ``--hash`` (indexes, ``-r``, ``-e``) are refused: they would make the
rebuild depend on something the bundle does not hold.
"""

from __future__ import annotations

import re
from pathlib import Path

from schemas.check_ids import SUBMISSION_REQUIREMENTS
from schemas.findings import Finding
from schemas.manifest import Dependency
from submission.defaults import REQUIREMENTS_FILE

_REQ = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?P<extras>\[[^\]]*\])?"
    r"\s*(?P<rest>.*)$"
)
_PIN = re.compile(r"^===?\s*(?P<version>[A-Za-z0-9][A-Za-z0-9.+!*_-]*)\s*(;.*)?$")
_HASH = re.compile(r"--hash[=\s]+(\S+)")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join backslash continuations, drop comments and blank lines."""
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(" #", 1)[0] if not raw.lstrip().startswith("#") else ""
        if not buf:
            start = lineno
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        buf += line
        if buf.strip():
            out.append((start, buf.strip()))
        buf = ""
    if buf.strip():
        out.append((start, buf.strip()))
    return out


def parse_requirements(
    text: str, *, source: str = REQUIREMENTS_FILE
) -> tuple[list[Dependency], list[Finding]]:
    deps: list[Dependency] = []
    findings: list[Finding] = []
    for lineno, line in _logical_lines(text):
        where = f"{source}:{lineno}"
        hashes = _HASH.findall(line)
        body = _HASH.sub("", line).strip()
        match = _REQ.match(body)
        if body.startswith("-") or match is None:
            findings.append(
                Finding(
                    SUBMISSION_REQUIREMENTS,
                    "error",
                    f"line {lineno} of {source} is not a plain requirement: {body[:60]!r}.",
                    hint="list packages as NAME==VERSION (with --hash=sha256:... if you like); "
                    "indexes and -r/-e are not allowed",
                    where=where,
                )
            )
            continue
        bad = [h for h in hashes if not re.fullmatch(r"sha(256|384|512):[0-9a-f]+", h)]
        if bad:
            findings.append(
                Finding(
                    SUBMISSION_REQUIREMENTS,
                    "error",
                    f"line {lineno} of {source} has a malformed hash {bad[0]!r}.",
                    hint="hashes look like --hash=sha256:<64 hex digits>",
                    where=where,
                )
            )
            continue
        pin = _PIN.match(match.group("rest").strip())
        deps.append(
            Dependency(
                name=match.group("name"),
                version=pin.group("version") if pin else None,
                hashes=hashes or None,
                spec=body,
            )
        )
    return deps, findings


def read_requirements(directory: Path) -> tuple[list[Dependency], list[Finding]]:
    path = directory / REQUIREMENTS_FILE
    if not path.is_file():
        return [], []
    return parse_requirements(path.read_text(encoding="utf-8"))
