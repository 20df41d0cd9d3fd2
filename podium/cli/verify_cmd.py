"""``podium verify``: blind verification of a bundle (the run itself: ``verification``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from podium.cli.options import (
    ChallengeOpt,
    DetailsOpt,
    JsonOpt,
    KeyOpt,
    LogsOpt,
    RunnerKind,
    RunnerOpt,
    out_option,
    signing_key,
    signing_key_path,
)
from podium.cli.output import set_json
from podium.cli.verification import refuse_secrets_unsandboxed, run_verification

VERIFY_HELP = """\
Verify BUNDLE blind: rebuild its image without cache, run it in the sandbox, measure
PPL and TPS on the held-out set, run the integrity checks, write a signed report.
The report (report.json in --out: what participants and the board see) gives every
engine-made number rounded; the full values and every check's details are the
organizer's, in organizer/evidence.json beside it, as is the engine's log (engine.log).

Verdicts and exit codes: VERIFIED 0, UNOFFICIAL 0 (off-spec hardware or runner),
REJECTED 1 (a rule broken), FAILED 3 (could not evaluate).

Examples:

  podium verify out/acme-tiny.tar.gz --key keys/organizer.pem

  podium verify entry.tar.gz --challenge fast-gemma --heldout /secure/heldout
  --reported-tps 510.58 --key k.pem --publish hf://datasets/org/leaderboard
"""


def verify_cmd(
    bundle: Annotated[Path, typer.Argument(help="The submission bundle (.tar.gz).")],
    challenge: ChallengeOpt = None,
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
    key: KeyOpt = None,
    publish: Annotated[
        str | None,
        typer.Option(
            "--publish",
            help="Publish the signed result to this store: ./dir or hf://datasets/ORG/NAME; "
            "held until the grid point after the report's finished (up to 30 minutes), "
            "so the run's length shows no finer than the report says.",
        ),
    ] = None,
    no_hold: Annotated[
        bool,
        typer.Option(
            "--no-hold",
            help="With --publish: publish at once (a demo, a private board); the run's "
            "length then shows in the board's times.",
        ),
    ] = False,
    runner: RunnerOpt = RunnerKind.local_docker,
    out: Annotated[Path, out_option("Folder for the report and logs")] = Path("out/verify"),
    logs: LogsOpt = False,
    details: DetailsOpt = False,
    json_out: JsonOpt = False,
) -> None:
    set_json(json_out)
    denied = refuse_secrets_unsandboxed(runner, key=key, publish=publish, heldout=heldout)
    raise typer.Exit(
        run_verification(
            bundle,
            details=details,
            challenge=challenge,
            runner=runner,
            out=out,
            reported_tps=reported_tps,
            heldout=heldout,
            key=None if denied else signing_key(key),
            key_path=None if denied else signing_key_path(key),
            publish=publish,
            self_check=False,
            logs=logs,
            hold=not no_hold,
        )
    )


def register(app: typer.Typer) -> None:
    app.command("verify", help=VERIFY_HELP)(verify_cmd)
