"""``podium schema``: validate documents against podium's JSON Schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from podium.cli.options import JsonOpt, resolve_challenge
from podium.cli.output import emit, set_json
from podium.errors import EXIT_FINDINGS, SchemaError, UsageError
from podium.untrusted import markup, text
from schemas.engine_config import check_engine_config, load_engine_config
from schemas.validate import KINDS, load_schema, read_json, schema_kinds, validation_errors

app = typer.Typer(help="JSON Schemas of podium's documents.", no_args_is_help=True)


@app.command("list")
def list_cmd(json_out: JsonOpt = False) -> None:
    """List the schema kinds. Example: podium schema list"""
    set_json(json_out)
    data = [
        {"kind": k, "file": f"schemas/json/{KINDS[k]}", "title": load_schema(k).get("title", "")}
        for k in schema_kinds()
    ]

    def human(con: Console) -> None:
        for d in data:
            con.print(text(f"{d['kind']:<14} {d['title']}"))

    emit(data, human)


@app.command("show")
def show_cmd(
    kind: Annotated[str, typer.Argument(help="Schema kind.")], json_out: JsonOpt = False
) -> None:
    """Print a JSON Schema (always JSON; --json is accepted for uniformity).

    Example: podium schema show engine-config
    """
    set_json(json_out)
    emit(load_schema(kind), as_json=True)


@app.command("validate")
def validate_cmd(
    kind: Annotated[str, typer.Argument(help=f"One of: {', '.join(schema_kinds())}.")],
    file: Annotated[
        Path, typer.Argument(help="The document (engine configs: .json, .toml or KEY=VALUE env).")
    ],
    challenge: Annotated[
        str | None,
        typer.Option(
            "--challenge",
            "-c",
            help="For engine-config: also apply this challenge's rules "
            "(default: $PODIUM_CHALLENGE, else tiny).",
        ),
    ] = None,
    no_rules: Annotated[
        bool, typer.Option("--no-rules", help="Engine-config: schema only.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Validate FILE against the KIND schema; every problem is listed at once.

    Exit 0 when valid, 1 when there are findings.

    Examples:

      podium schema validate engine-config winning.env

      podium schema validate challenge my-challenge.json --json
    """
    set_json(json_out)
    if kind not in KINDS:
        raise UsageError(
            f"unknown schema kind {kind!r}", hint=f"choose one of: {', '.join(schema_kinds())}"
        )
    if not file.exists():
        raise UsageError(f"no such file: {file}")
    if kind == "engine-config":
        config = load_engine_config(file)
        spec = None if no_rules else resolve_challenge(challenge)
        findings = check_engine_config(config, spec, file=str(file))
        problems = [
            {
                "id": f.check_id,
                "severity": f.severity,
                "where": f.where,
                "message": f.message,
                "hint": f.hint,
            }
            for f in findings
        ]
    else:
        try:
            doc = read_json(file)
        except SchemaError as exc:
            problems = [
                {"id": "schema.parse", "where": exc.where, "message": exc.message, "hint": None}
            ]
        else:
            problems = [
                {
                    "id": "schema",
                    "where": e.json_path,
                    "message": e.message,
                    "hint": f"expected {e.expected}",
                }
                for e in validation_errors(kind, doc, file=str(file))
            ]
    failed = [p for p in problems if p.get("severity", "error") == "error"]
    result = {"kind": kind, "file": str(file), "valid": not failed, "problems": problems}

    def human(con: Console) -> None:
        errors = [p for p in problems if p.get("severity", "error") == "error"]
        for p in problems:
            con.print(text(f"  [{p['id']}] {p['where']}: {p['message']}"))
            if p["hint"]:
                con.print(text(f"      hint: {p['hint']}", "dim"))
        if errors:
            con.print(f"[red]{len(errors)} problem(s)[/] in {markup(file)} ({markup(kind)})")
        else:
            con.print(f"[green]valid[/] {markup(kind)}: {markup(file)}")

    emit(result, human)
    if failed:
        raise typer.Exit(EXIT_FINDINGS)
