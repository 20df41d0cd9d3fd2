"""``podium challenge``: list and show challenge specs."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from podium.cli.challenge_view import describe
from podium.cli.options import JsonOpt, complete_challenges, load_named_challenge
from podium.cli.output import emit, set_json
from podium.untrusted import text
from schemas.challenge import list_challenges, load_challenge
from submission.knobs import knob_table

app = typer.Typer(help="Challenge specs: the rules every result depends on.", no_args_is_help=True)


@app.command("list")
def list_cmd(json_out: JsonOpt = False) -> None:
    """List the challenges shipped with podium.

    Example: podium challenge list --json
    """
    set_json(json_out)
    specs = [load_challenge(name) for name in list_challenges()]
    data: list[dict[str, Any]] = [
        {
            "id": s.id,
            "version": s.version,
            "title": s.title,
            "model": s.model.repo_id,
            "hardware": s.hardware.describe(),
            "ppl_cap": round(s.quality.cap, 6),
        }
        for s in specs
    ]

    def human(con: Console) -> None:
        table = Table(title="challenges")
        for col in ("id", "version", "title", "model", "hardware", "PPL cap"):
            table.add_column(col)
        for d in data:
            cells = (d["id"], d["version"], d["title"], d["model"], d["hardware"])
            table.add_row(*(text(c) for c in cells), f"{d['ppl_cap']:.4f}")
        con.print(table)

    emit(data, human)


@app.command("show")
def show_cmd(
    name: Annotated[
        str,
        typer.Argument(
            help="A shipped challenge name or a spec file.", autocompletion=complete_challenges
        ),
    ],
    json_out: JsonOpt = False,
) -> None:
    """Show one challenge spec: its model, hardware, PPL cap, workload, rules and knobs.

    The knob table lists every knob the challenge allows: what it does, the values it
    accepts (and the value a rule pins), and the engine kinds that act on it.

    Examples:

      podium challenge show fast-gemma

      podium challenge show tiny --json
    """
    set_json(json_out)
    spec = load_named_challenge(name, "NAME")
    doc = spec.to_dict()
    doc["computed"] = {
        "ppl_cap": spec.quality.cap,
        "tokens_per_trial": spec.tps.tokens_per_trial,
        "spec_sha256": spec.sha256,
    }
    doc["knobs"] = [row.to_dict() for row in knob_table(spec)]
    emit(doc, lambda con: describe(spec, con))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="challenge")
