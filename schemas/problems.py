"""Every problem of one document, whatever its kind: what ``podium schema validate`` lists.

A problem is ``{id, severity, where, message, hint}``. A JSON document's problems are its
schema's errors (``schema``, or ``schema.parse`` when the file is not JSON); an engine
config's are its findings (the schema's, and a challenge's rules when one is given).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from podium.errors import SchemaError
from schemas.challenge import ChallengeSpec
from schemas.engine_config import check_engine_config, key_lines
from schemas.validate import read_json, validation_errors


def problem(
    check_id: str, severity: str, where: str | None, message: str, hint: str | None
) -> dict[str, Any]:
    return {"id": check_id, "severity": severity, "where": where, "message": message, "hint": hint}


def document_problems(kind: str, path: Path) -> list[dict[str, Any]]:
    """The ``kind`` schema's errors in the JSON document at ``path`` (in each record of a
    JSON Lines file, ``.jsonl``, such as a held-out set's, placed at its line)."""
    if path.suffix == ".jsonl":
        return _lines_problems(kind, path)
    try:
        doc = read_json(path)
    except SchemaError as exc:
        return [problem("schema.parse", "error", exc.where, exc.message, None)]
    return [
        problem("schema", "error", e.json_path, e.message, f"expected {e.expected}")
        for e in validation_errors(kind, doc, file=str(path))
    ]


def _lines_problems(kind: str, path: Path) -> list[dict[str, Any]]:
    import json

    out: list[dict[str, Any]] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            out.append(problem("schema.parse", "error", f"line {n}", exc.msg, None))
            continue
        out += [
            problem(
                "schema", "error", f"line {n}: {e.json_path}", e.message, f"expected {e.expected}"
            )
            for e in validation_errors(kind, doc, file=str(path))
        ]
    return out


def engine_config_problems(
    path: Path, config: dict[str, Any], spec: ChallengeSpec | None, *, kind: str | None
) -> list[dict[str, Any]]:
    """The findings of the engine config read from ``path``, each placed at its line;
    ``spec``'s rules apply when given, and ``kind``'s knob names (vllm, baseline)."""
    lines = key_lines(path.read_text(encoding="utf-8"), config)
    findings = check_engine_config(config, spec, file=str(path), kind=kind, lines=lines)
    return [problem(f.check_id, f.severity, f.where, f.message, f.hint) for f in findings]


def validation_result(kind: str, path: Path, problems: list[dict[str, Any]]) -> dict[str, Any]:
    """The document ``podium schema validate --json`` prints: valid unless an error."""
    errors = sum(1 for p in problems if p["severity"] == "error")
    warnings = sum(1 for p in problems if p["severity"] == "warning")
    return {
        "kind": kind,
        "file": str(path),
        "valid": not errors,
        "errors": errors,
        "warnings": warnings,
        "problems": problems,
    }
