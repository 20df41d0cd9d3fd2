"""``podium verify``: blind verification of a bundle, and the participant's self-check."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from podium.cli.output import JsonOpt, console, emit, set_json
from podium.errors import EXIT_CANNOT_EVALUATE, EXIT_FINDINGS, EXIT_OK, UsageError
from podium.signing import KeyPair, load_private_key
from schemas.challenge import load_challenge

RUNNERS = ("local-docker", "process", "hf-jobs")

VERIFY_HELP = """\
Verify BUNDLE blind: rebuild its image without cache, run it in the sandbox, measure
PPL and TPS on the held-out set, run the integrity checks, write a signed report.

Verdicts and exit codes: VERIFIED 0, UNOFFICIAL 0 (off-spec hardware or runner),
REJECTED 1 (a rule broken), FAILED 3 (could not evaluate).

Examples:

  podium verify out/acme-tiny.tar.gz --challenge tiny --key keys/organizer.pem

  podium verify entry.tar.gz --challenge fast-gemma --heldout /secure/heldout
  --reported-tps 510.58 --key k.pem --publish hf://datasets/org/leaderboard
"""


def bundle_challenge(bundle: Path) -> str:
    """The challenge id a bundle's manifest names."""
    from submission.safe_bundle import peek_manifest

    if not bundle.is_file():
        raise UsageError(
            f"no such bundle: {bundle}", hint="package one with `podium submission package`"
        )
    challenge = (peek_manifest(bundle).get("challenge") or {}).get("id")
    if not isinstance(challenge, str):
        raise UsageError(f"{bundle}'s manifest names no challenge", hint="pass --challenge NAME")
    return challenge


def _key(path: Path | None) -> KeyPair | None:
    if path is None:
        env = os.environ.get("PODIUM_KEY")
        path = Path(env) if env else None
    return load_private_key(path) if path else None


def _runner(name: str) -> Any:
    if name == "local-docker":
        from verifier.runners.local_docker import LocalDockerRunner

        return LocalDockerRunner()
    if name == "process":
        from verifier.runners.process import ProcessRunner

        return ProcessRunner()
    if name == "hf-jobs":
        server = os.environ.get("PODIUM_SERVER_URL")
        if not server:
            raise UsageError(
                "the hf-jobs runner drives an engine that a server job already serves",
                hint="run `podium dispatch` (it starts the jobs), or set PODIUM_SERVER_URL",
            )
        from verifier.runners.hf_jobs import HfJobsRunner

        return HfJobsRunner(os.path.expandvars(server))
    raise UsageError(f"unknown runner {name!r}", hint=f"choose one of: {', '.join(RUNNERS)}")


def _reference_runner(settings: Any) -> Any:
    from verifier.runners.process import reference_runner

    return reference_runner(settings)


def summary_table(report: dict[str, Any], con: Console) -> None:
    m = report.get("metrics") or {}
    ppl, tps = m.get("ppl") or {}, m.get("tps") or {}
    label = (
        report["verdict"]
        if report["mode"] == "official"
        else f"SELF-REPORTED ({report['verdict']})"
    )
    colour = {"VERIFIED": "green", "REJECTED": "red", "FAILED": "red"}.get(
        report["verdict"], "yellow"
    )
    sub = report["submission"]
    con.print(
        f"\n[bold {colour}]{label}[/] {sub['team']}/{sub['entry']} on "
        f"{report['challenge']['id']} {report['challenge']['version']} ({report['runner']})"
    )
    table = Table(show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", justify="right")
    if tps:
        ci = tps.get("ci95") or [None, None]
        table.add_row("TPS (median)", f"{tps['median']:.2f}")
        if ci[0] is not None:
            table.add_row("TPS 95% CI", f"{ci[0]:.2f} .. {ci[1]:.2f}")
        table.add_row("TPS CV", f"{tps.get('cv', 0):.2%}")
    if m.get("reported_tps"):
        table.add_row("reported TPS", f"{m['reported_tps']:.2f}")
    if ppl:
        table.add_row("PPL", "undefined" if ppl["value"] is None else f"{ppl['value']:.4f}")
        table.add_row("PPL cap", f"{ppl['cap']:.4f}")
    con.print(table)
    checks = Table(show_header=True, header_style="bold")
    checks.add_column("check")
    checks.add_column("status")
    checks.add_column("summary", overflow="fold")
    for c in report.get("checks", []):
        style = {"pass": "green", "fail": "red", "error": "red"}.get(c["status"], "yellow")
        checks.add_row(c["id"], f"[{style}]{c['status']}[/]", c["summary"])
    if report.get("checks"):
        con.print(checks)
    for f in report.get("findings", []):
        con.print(
            f"  [{'red' if f['severity'] == 'error' else 'yellow'}]{f['severity']}[/] "
            f"[{f['check_id']}] {f['message']}",
            highlight=False,
        )
    if report.get("failure"):
        fail = report["failure"]
        con.print(f"[red]FAILED at stage {fail['stage']}:[/] {fail['message']}", highlight=False)
        if fail.get("log_tail"):
            con.print("[dim]engine log (tail):[/]")
            con.print(fail["log_tail"][-1500:], markup=False, highlight=False)


def exit_code(verdict: str) -> int:
    return {"VERIFIED": EXIT_OK, "UNOFFICIAL": EXIT_OK, "REJECTED": EXIT_FINDINGS}.get(
        verdict, EXIT_CANNOT_EVALUATE
    )


def run_verification(
    bundle: Path,
    *,
    challenge: str,
    runner: str,
    out: Path,
    reported_tps: float | None,
    heldout: str | None,
    key: Path | None,
    publish: str | None,
    self_check: bool,
    logs: bool,
    no_reference: bool = False,
) -> int:
    from verifier.pipeline import VerifyRequest, verify

    if not bundle.is_file():
        raise UsageError(
            f"no such bundle: {bundle}", hint="package one with `podium submission package`"
        )
    keypair = _key(key)
    if publish and keypair is None:
        raise UsageError(
            "--publish needs a signing key", hint="pass --key KEYFILE (podium keys generate)"
        )
    spec = load_challenge(challenge)
    req = VerifyRequest(
        bundle=bundle,
        spec=spec,
        runner=_runner(runner),
        out_dir=out,
        reported_tps=reported_tps,
        heldout=heldout,
        key=keypair,
        self_check=self_check,
        reference=None if no_reference else _reference_runner,
    )
    from podium.cli.output import json_mode

    if json_mode():
        outcome = verify(req)
    else:
        from podium.cli.progress import RichEvents

        con = console()
        con.print(
            f"verifying {bundle} against {spec.id} {spec.version} "
            f"({'self-check, public prompts' if self_check else 'held-out set'}; runner {runner})"
        )
        with RichEvents(con, show_logs=logs) as events:
            outcome = verify(req, events)
    result: dict[str, Any] = {
        "verdict": outcome.verdict,
        "report": str(outcome.report_path),
        "signed": outcome.signed,
        "published": None,
    }
    if publish:
        result["published"] = _publish(outcome, keypair, publish)
    emit({**result, "report_document": outcome.report}, lambda con: _human(con, outcome, result))
    return exit_code(outcome.verdict)


def _publish(outcome: Any, keypair: KeyPair | None, store_url: str) -> dict[str, Any]:
    from leaderboard.publish import publish_reports
    from leaderboard.stores import open_store
    from podium.errors import PodiumError

    assert keypair is not None
    if outcome.verdict == "FAILED" or not outcome.signed:
        return {"ok": False, "reason": "only complete, signed reports are published"}
    try:
        published = publish_reports([outcome.report], open_store(store_url), keypair)
    except PodiumError as exc:
        return {
            "ok": False,
            "reason": str(exc),
            "retry": f"podium leaderboard publish {outcome.report_path} --store {store_url} "
            "--key KEYFILE",
        }
    return {"ok": True, **published.to_dict()}


def _human(con: Console, outcome: Any, result: dict[str, Any]) -> None:
    summary_table(outcome.report, con)
    con.print(
        f"report: {outcome.report_path}"
        + ("" if outcome.signed else " [yellow](unsigned: no --key)[/]")
    )
    pub = result.get("published")
    if pub:
        if pub.get("ok"):
            added, present = len(pub.get("added") or []), len(pub.get("already_present") or [])
            con.print(f"published to {pub['store']} ({added} added, {present} already there)")
        else:
            con.print(f"[red]not published:[/] {pub['reason']}")
            if pub.get("retry"):
                con.print(f"retry with: {pub['retry']}")


def register(app: typer.Typer) -> None:
    @app.command("verify", help=VERIFY_HELP)
    def verify_cmd(
        bundle: Annotated[Path, typer.Argument(help="The submission bundle (.tar.gz).")],
        challenge: Annotated[
            str | None,
            typer.Option(help="Challenge name or spec file (default: the one the manifest names)."),
        ] = None,
        reported_tps: Annotated[
            float | None,
            typer.Option(help="The TPS the participant reported (default: the manifest's)."),
        ] = None,
        heldout: Annotated[
            str | None,
            typer.Option(
                help="Held-out set: a directory with prompts.jsonl "
                "and ppl.jsonl, or hf://datasets/ORG/NAME[@REV]."
            ),
        ] = None,
        key: Annotated[
            Path | None,
            typer.Option(help="Ed25519 private key to sign the report (default: $PODIUM_KEY)."),
        ] = None,
        publish: Annotated[
            str | None, typer.Option(help="Publish to this store: ./dir or hf://datasets/ORG/NAME.")
        ] = None,
        runner: Annotated[
            str,
            typer.Option(help="local-docker (sandbox), process, or hf-jobs (in a harness job)."),
        ] = "local-docker",
        out: Annotated[
            Path, typer.Option("--out", "-o", help="Directory for the report and logs.")
        ] = Path("out/verify"),
        logs: Annotated[bool, typer.Option("--logs", help="Stream the image build log.")] = False,
        json_out: JsonOpt = False,
    ) -> None:
        set_json(json_out)
        raise typer.Exit(
            run_verification(
                bundle,
                challenge=challenge or bundle_challenge(bundle),
                runner=runner,
                out=out,
                reported_tps=reported_tps,
                heldout=heldout,
                key=key,
                publish=publish,
                self_check=False,
                logs=logs,
            )
        )
