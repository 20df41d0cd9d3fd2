"""``podium report``: check and show signed verification reports."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from podium.cli.options import DetailsOpt, JsonOpt
from podium.cli.output import emit, set_json
from podium.cli.render import Signature, render_report
from podium.errors import EXIT_FINDINGS, SchemaError, SignatureError
from podium.signing import load_public_key, verify_document
from podium.untrusted import markup
from schemas.validate import read_json, validation_errors

app = typer.Typer(
    help="Verification reports: check a signature, show a report.", no_args_is_help=True
)

PubkeyOpt = Annotated[
    Path | None,
    typer.Option("--pubkey", help="The organizer's public key (PEM); checks the signature."),
]


def _read_report(path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """The report document and its problems (unreadable, not an object, off-schema)."""
    try:
        doc = read_json(path)
    except SchemaError as exc:
        return None, [f"not readable: {exc.message}"]
    if not isinstance(doc, dict):
        return None, ["the report is not a JSON object"]
    problems = [f"{e.json_path}: {e.message}" for e in validation_errors("report", doc)]
    return doc, problems


def _signature(doc: dict[str, Any], pubkey: Path | None, file: Path) -> Signature:
    sig = doc.get("signature") if isinstance(doc.get("signature"), dict) else None
    kid = sig.get("key_id") if sig else None
    if pubkey is None:
        if sig is None:
            return Signature("unsigned", unsigned_because="the report carries no signature")
        how = f"podium report verify {shlex.quote(str(file))} --pubkey ORGANIZER.pem.pub"
        return Signature("unchecked", key_id=kid, how_to_check=how)
    try:
        return Signature("verified", key_id=verify_document(doc, load_public_key(pubkey)))
    except SignatureError as exc:
        return Signature("invalid", key_id=kid, problem=exc.message)


@app.command("verify")
def verify_cmd(
    report: Annotated[Path, typer.Argument(help="A report JSON file written by podium verify.")],
    pubkey: Annotated[Path, typer.Option("--pubkey", help="The organizer's public key (PEM).")],
    json_out: JsonOpt = False,
) -> None:
    """Check a report's schema and Ed25519 signature; exit 1 if it was altered.

    Example: podium report verify out/verify/report.json --pubkey keys/organizer.pem.pub
    """
    set_json(json_out)
    public = load_public_key(pubkey)
    doc, problems = _read_report(report)
    key = None
    if doc is not None:
        try:
            key = verify_document(doc, public)
        except SignatureError as exc:
            problems.append(exc.message)
    result = {
        "report": str(report),
        "valid": not problems,
        "key_id": key,
        "problems": problems,
        "verdict": doc.get("verdict") if doc is not None else None,
    }

    def human(con: Console) -> None:
        if problems:
            con.print(f"[red]INVALID[/] {markup(report)}")
            for p in problems:
                con.print(f"  {markup(p)}")
        else:
            con.print(
                f"[green]signature OK[/] {markup(report)}: verdict "
                f"{markup(result['verdict'])}, key {markup(key)}"
            )

    emit(result, human)
    if problems:
        raise typer.Exit(EXIT_FINDINGS)


@app.command("show")
def show_cmd(
    report: Annotated[Path, typer.Argument(help="A report JSON file.")],
    pubkey: PubkeyOpt = None,
    details: DetailsOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Show a report for humans; with --pubkey its signature is checked first.

    Without --pubkey the signature is NOT checked, and the output says so. Exit 1 when
    the report is off-schema or its signature does not match the key. It shows the verdict,
    the TPS with its interval, the PPL against the cap and the checks that did not pass;
    --details shows every metric and check, --json the whole document.

    Examples:

      podium report show out/verify/report.json

      podium report show out/verify/report.json --details

      podium report show out/verify/report.json --pubkey keys/organizer.pem.pub --json
    """
    set_json(json_out)
    doc, problems = _read_report(report)
    if doc is None:
        raise SchemaError(
            problems[0], file=str(report), hint="pass a report.json from podium verify"
        )
    signature = _signature(doc, pubkey, report)
    result = {
        "report": str(report),
        "schema_problems": problems,
        "signature": {
            "state": signature.state,
            "key_id": signature.key_id,
            "problem": signature.problem,
        },
        "report_document": doc,
    }

    def human(con: Console) -> None:
        if problems:
            con.print(f"[red]not a valid report[/] {markup(report)}:")
            for p in problems:
                con.print(f"  {markup(p)}")
            return
        more = (
            f"every metric and check: podium report show {shlex.quote(str(report))} "
            "--details (or --json)"
        )
        render_report(con, doc, signature, details=details, more=more)

    emit(result, human)
    if problems or signature.state == "invalid":
        raise typer.Exit(EXIT_FINDINGS)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="report")
