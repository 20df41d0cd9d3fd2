"""``podium challenge``: list and show challenge specs."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from podium.cli.options import JsonOpt, complete_challenges, load_named_challenge
from podium.cli.output import emit, set_json
from podium.untrusted import markup, text
from schemas.challenge import ChallengeSpec, list_challenges, load_challenge
from submission.knobs import KnobRow, knob_table

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


def _describe(spec: ChallengeSpec, con: Console) -> None:
    q, t, p = spec.quality, spec.tps, spec.ppl
    con.print(f"[bold]{markup(spec.title)}[/] ({markup(spec.id)} {markup(spec.version)})")
    con.print(text(f"model      {spec.model.repo_id} @ {spec.model.revision} ({spec.model.dtype})"))
    con.print(text(f"hardware   {spec.hardware.describe()}"))
    rule = (
        f"reference {q.reference_ppl} x {q.max_ratio}"
        if q.rule == "ratio"
        else f"absolute {q.max_ppl}"
    )
    con.print(text(f"PPL cap    {q.cap:.4f} ({rule})"))
    con.print(
        text(
            f"PPL        {p.endpoint}, prompt_logprobs={p.prompt_logprobs}, "
            f"add_special_tokens={str(p.add_special_tokens).lower()}, {p.aggregate}-average "
            "over target tokens"
        )
    )
    con.print(
        text(
            f"TPS        {t.num_prompts} prompts x {t.max_tokens} tokens, "
            f"ignore_eos={str(t.ignore_eos).lower()}, concurrency {t.concurrency}, "
            f"{t.warmup_requests} warm-ups, seed {t.seed}, {t.endpoint}, "
            f"stream={str(t.stream).lower()}, {t.trials} trials, "
            f"reproduction within {t.reproduction_tolerance:.0%}"
        )
    )
    lim = spec.limits
    con.print(
        text(
            f"limits     build {lim.build_s:.0f} s, start-up {lim.startup_s:.0f} s, "
            f"evaluation {lim.evaluation_s:.0f} s, bundle {lim.bundle_bytes / 2**20:.0f} MiB, "
            f"image {lim.image_bytes / 2**30:.0f} GiB"
        )
    )
    con.print(text(f"engines    {', '.join(spec.engine.kinds)}"))
    for forbidden in spec.engine.forbidden:
        con.print(text(f"rule       {forbidden.message}"))
    con.print()
    print_knobs(con, knob_table(spec), title=f"knobs the {spec.id} challenge allows")


_UNSET = object()


def print_knobs(
    con: Console, rows: list[KnobRow], *, title: str, values: dict[str, Any] | None = None
) -> None:
    """The knobs as ``vllm serve --help`` lists options: a line with the name, the values
    it accepts and the engines that act on it, then what it does, indented. A list (not
    a table) reads at any terminal width and in a pipe."""
    con.print(text(f"{title}:", "bold"))
    width = max((len(r.name) for r in rows), default=0)
    for row in rows:
        line = Text("  ")
        line.append(row.name.ljust(width), style="bold")
        if values is not None:
            line.append_text(
                text(f"  = {json.dumps(values[row.name])}" if row.name in values else "  (not set)")
            )
        accepted = row.accepted + (f"; {row.rule}" if row.rule else "")
        line.append_text(text(f"  {accepted}"))
        line.append(f"  [{', '.join(row.engines) or 'custom only'}]", style="dim")
        con.print(line)
        if row.does:
            con.print(text(f"      {row.does}"))
    con.print(
        text(
            "[...]: the engine kinds that act on the knob; a custom engine reads what its own "
            "code reads"
        )
    )


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
    emit(doc, lambda con: _describe(spec, con))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="challenge")
