"""Load documents and validate them against podium's JSON Schemas (draft 2020-12).

Every error names the file, the JSON path of the failing value and what was expected;
all errors of a document are collected at once (``SchemaError.errors``) so a user can
fix them in one pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import ValidationError

from podium.errors import SchemaError, UsageError

#: kind name (as used on the command line) -> schema file name
KINDS: dict[str, str] = {
    "challenge": "challenge.schema.json",
    "engine-config": "engine-config.schema.json",
    "manifest": "manifest.schema.json",
    "report": "report.schema.json",
    "record": "record.schema.json",
    "queue-request": "queue-request.schema.json",
    "head": "head.schema.json",
    "withdrawal": "withdrawal.schema.json",
    "key-rotation": "key-rotation.schema.json",
    "roster": "roster.schema.json",
    "heldout-prompt": "heldout-prompt.schema.json",
    "heldout-ppl": "heldout-ppl.schema.json",
}


def schema_kinds() -> list[str]:
    return sorted(KINDS)


@cache
def load_schema(kind: str) -> dict[str, Any]:
    try:
        name = KINDS[kind]
    except KeyError:
        raise UsageError(
            f"unknown schema kind {kind!r}", hint=f"choose one of: {', '.join(schema_kinds())}"
        ) from None
    text = resources.files("schemas").joinpath("json", name).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema(kind), format_checker=FormatChecker())


def json_path(parts: Iterable[Any]) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _expected(err: ValidationError) -> str:
    """A short phrase for what the schema wanted at the failing location."""
    v = err.validator
    val = err.validator_value
    if v == "type":
        return f"type {val}"
    if v in ("enum", "const"):
        return f"one of {val!r}" if v == "enum" else f"exactly {val!r}"
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"{v} {val}"
    if v == "required":
        return f"required members {val}"
    if v == "additionalProperties":
        return "no members other than those the schema names"
    if v == "pattern":
        return f"a string matching {val}"
    return f"{v} {val!r}" if not isinstance(val, (dict, list)) else str(v)


def _to_schema_error(err: ValidationError, file: str | None) -> SchemaError:
    path = json_path(err.absolute_path)
    return SchemaError(err.message, file=file, json_path=path, expected=_expected(err))


def validation_errors(kind: str, doc: Any, *, file: str | None = None) -> list[SchemaError]:
    """Every schema error of ``doc``, sorted by location."""
    errors = sorted(
        _validator(kind).iter_errors(doc), key=lambda e: list(map(str, e.absolute_path))
    )
    return [_to_schema_error(e, file) for e in errors]


def validate(kind: str, doc: Any, *, file: str | None = None) -> None:
    """Raise ``SchemaError`` (with every error in ``.errors``) unless ``doc`` is valid."""
    errors = validation_errors(kind, doc, file=file)
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise SchemaError(
            f"{first.message}{more}",
            file=file,
            json_path=first.json_path,
            expected=first.expected,
            errors=errors,
            hint=f"the {kind} schema is in schemas/json/{KINDS[kind]}",
        )


def read_json(path: Path) -> Any:
    """Read a JSON file; a missing or malformed file is a clear error naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory, not a JSON file") from None
    except UnicodeDecodeError as exc:
        raise SchemaError(f"not UTF-8 text: {exc.reason}", file=str(path)) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            file=str(path),
            expected="a JSON document",
        ) from None


def load_and_validate(kind: str, path: Path) -> Any:
    doc = read_json(path)
    validate(kind, doc, file=str(path))
    return doc
