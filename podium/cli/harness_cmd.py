"""``podium harness``: what a dispatcher's harness job runs (hidden from ``podium --help``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from podium.cli.options import (
    ChallengeOpt,
    HeldoutOpt,
    JsonOpt,
    KeyOpt,
    bundle_challenge,
    challenge_name,
    out_option,
    require_heldout,
    require_signing_key,
)
from podium.cli.output import json_mode, set_json
from podium.cli.verification import exit_code

HARNESS_HELP = """\
Run the harness against an engine at --server (what the harness job runs, so it is not
listed in `podium --help`): PPL, TPS, checks, verdict, a report signed with --key or
$PODIUM_SIGNING_KEY, printed as PODIUM-REPORT lines for the dispatcher.

Example:

  podium harness --server 'http://${HF_NETWORK_GROUP_PREFIX}engine:8000'
  --bundle /queue/bundles/SHA.tar.gz --challenge fast-gemma --heldout /heldout
"""


def harness_cmd(
    server: Annotated[str, typer.Option(help="The engine's base URL ($VARS expanded).")],
    bundle: Annotated[Path, typer.Option(help="The submission bundle.")],
    challenge: ChallengeOpt = None,
    key: KeyOpt = None,
    heldout: HeldoutOpt = None,
    reported_tps: Annotated[float | None, typer.Option(help="The participant's TPS.")] = None,
    out: Annotated[Path, out_option("Where the report goes")] = Path("out/harness"),
    image_id: Annotated[str | None, typer.Option(help="The server image's id.")] = None,
    server_job: Annotated[str | None, typer.Option(help="The server job's id.")] = None,
    flavor: Annotated[str | None, typer.Option(help="The server job's flavour.")] = None,
    network_group: Annotated[str | None, typer.Option(help="The network group.")] = None,
    json_out: JsonOpt = False,
) -> None:
    from verifier.scale.dispatch.harness_job import run_harness_job

    set_json(json_out)
    facts = {
        "server_job": server_job,
        "flavor": flavor,
        "network_group": network_group,
        "image": {"id": image_id} if image_id else {},
    }
    outcome = run_harness_job(
        server_url=server,
        bundle=bundle,
        challenge=challenge_name(challenge, bundle_challenge(bundle)),
        out=out,
        key=require_signing_key(key),
        heldout=require_heldout(heldout),
        reported_tps=reported_tps,
        facts=facts,
        print_line=lambda line: print(line, flush=True),
    )
    if json_mode():
        print(json.dumps({"verdict": outcome.verdict, "report": str(outcome.report_path)}))
    raise typer.Exit(exit_code(outcome.verdict))


def register(app: typer.Typer) -> None:
    app.command("harness", help=HARNESS_HELP, hidden=True)(harness_cmd)
