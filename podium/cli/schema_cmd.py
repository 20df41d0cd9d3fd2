"""``podium schema``: validate documents against podium's JSON Schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from podium.cli.options import (
    JsonOpt,
    complete_challenges,
    complete_engine_kinds,
    complete_schema_kinds,
    require_engine_kind,
    resolve_challenge,
)
from podium.cli.output import emit, set_json
from podium.errors import EXIT_FINDINGS, UsageError
from podium.untrusted import markup, text
from schemas.engine_config import load_engine_config
from schemas.validate import KINDS, load_schema, schema_kinds

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
    kind: Annotated[str, typer.Argument(help="Schema kind.", autocompletion=complete_schema_kinds)],
    json_out: JsonOpt = False,
) -> None:
    """Print a JSON Schema (always JSON; --json is accepted for uniformity).

    Example: podium schema show engine-config
    """
    set_json(json_out)
    emit(load_schema(kind), as_json=True)


@app.command("validate")
def validate_cmd(
    kind: Annotated[
        str,
        typer.Argument(
            help=f"One of: {', '.join(schema_kinds())}.", autocompletion=complete_schema_kinds
        ),
    ],
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
            autocompletion=complete_challenges,
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            metavar="KIND",
            help="For engine-config: the engine kind it is for (vllm, baseline, custom); "
            "with vllm or baseline a key that is no known knob is an error.",
            autocompletion=complete_engine_kinds,
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
    from schemas.problems import document_problems, engine_config_problems, validation_result

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
        problems = engine_config_problems(file, config, spec, kind=require_engine_kind(engine))
    else:
        problems = document_problems(kind, file)
    result = validation_result(kind, file, problems)
    emit(result, lambda con: _print_problems(con, result))
    if not result["valid"]:
        raise typer.Exit(EXIT_FINDINGS)


def _print_problems(con: Console, result: dict[str, Any]) -> None:
    """Each problem on a line (and its hint), then the counts or ``valid``."""
    kind, file = result["kind"], result["file"]
    for p in result["problems"]:
        con.print(text(f"  {p['severity']:<7} [{p['id']}] {p['where']}: {p['message']}"))
        if p["hint"]:
            con.print(text(f"          hint: {p['hint']}", "dim"))
    counts = ", ".join(
        f"{n} {word}{'s' if n != 1 else ''}"
        for n, word in ((result["errors"], "error"), (result["warnings"], "warning"))
        if n
    )
    if not result["valid"]:
        con.print(f"[red]{counts}[/] in {markup(file)} ({markup(kind)})")
    else:
        con.print(
            f"[green]valid[/] {markup(kind)}: {markup(file)}" + (f" ({counts})" if counts else "")
        )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="schema")
