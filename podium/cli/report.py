"""``podium report``: check and show signed verification reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from podium.cli.output import JsonOpt, emit, set_json
from podium.errors import EXIT_FINDINGS, SchemaError, SignatureError
from podium.signing import load_public_key, verify_document
from schemas.report import Report
from schemas.validate import read_json, validation_errors

app = typer.Typer(help="Verification reports.", no_args_is_help=True)


@app.command("verify")
def verify_cmd(
    report: Annotated[Path, typer.Argument(help="A report JSON file written by podium verify.")],
    pubkey: Annotated[Path, typer.Option("--pubkey", help="The organizer's public key (PEM).")],
    json_out: JsonOpt = False,
) -> None:
    """Check a report's schema and Ed25519 signature; exit 1 if it was altered.

    Example: podium report verify out/report.json --pubkey keys/organizer.pem.pub
    """
    set_json(json_out)
    public = load_public_key(pubkey)
    problems: list[str] = []
    key = None
    try:
        doc = read_json(report)
    except SchemaError as exc:
        doc, problems = None, [f"not readable: {exc.message}"]
    if isinstance(doc, dict):
        problems += [
            f"{e.json_path}: {e.message}"
            for e in validation_errors("report", doc, file=str(report))
        ]
        try:
            key = verify_document(doc, public)
        except SignatureError as exc:
            problems.append(exc.message)
    elif doc is not None:
        problems.append("the report is not a JSON object")
    result = {
        "report": str(report),
        "valid": not problems,
        "key_id": key,
        "problems": problems,
        "verdict": doc.get("verdict") if isinstance(doc, dict) else None,
    }

    def human(con: Console) -> None:
        if problems:
            con.print(f"[red]INVALID[/] {report}")
            for p in problems:
                con.print(f"  {p}", markup=False)
        else:
            con.print(f"[green]signature OK[/] {report}: verdict {result['verdict']}, key {key}")

    emit(result, human)
    if problems:
        raise typer.Exit(EXIT_FINDINGS)


@app.command("show")
def show_cmd(
    report: Annotated[Path, typer.Argument(help="A report JSON file.")],
    json_out: JsonOpt = False,
) -> None:
    """Summarise a report for humans. Example: podium report show out/report.json"""
    set_json(json_out)
    doc = read_json(report)
    rep = Report.parse(doc, file=str(report))

    def human(con: Console) -> None:
        con.print(
            f"[bold]{rep.label}[/] {rep.submission.get('team')}/{rep.submission.get('entry')} "
            f"on {rep.challenge.get('id')} {rep.challenge.get('version')}"
        )
        tps, ppl = rep.metrics.get("tps") or {}, rep.metrics.get("ppl") or {}
        if tps:
            con.print(f"TPS {tps.get('median', 0):.2f} (95% CI {tps.get('ci95')})")
        if ppl:
            value = ppl.get("value")
            shown = "undefined" if value is None else f"{value:.4f}"
            con.print(f"PPL {shown} (cap {ppl.get('cap', 0):.4f})")
        for c in rep.checks:
            con.print(f"  {c.status:<5} {c.id}: {c.summary}", markup=False)
        for f in rep.findings:
            con.print(f"  finding {f.one_line()}", markup=False)
        if rep.failure:
            con.print(f"FAILED at {rep.failure.stage}: {rep.failure.message}", markup=False)

    emit(doc, human)
