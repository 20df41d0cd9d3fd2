"""``podium submission``: init, validate, freeze, package, inspect, import, push, submit,
status, selfcheck, sweep.

Each command is wiring over a function of the ``submission`` package, and each ends by
saying what to do next. Exit codes: 0 ok, 1 findings, 2 usage, 3 could not evaluate
(Docker, Hub).

Here: the group and the commands that write and check a directory. The bundle's commands
(package, inspect, selfcheck) are in ``submission_bundle_cmd``, entering a competition's
server (submit, status) in ``submission_server_cmd``, the sweep in
``submission_sweep_cmd``; the group mounts them all in the order its help lists them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from podium.cli.challenge_view import print_knobs
from podium.cli.findings_view import finish
from podium.cli.options import (
    BaseDigestOpt,
    ChallengeOpt,
    EntryArg,
    JsonOpt,
    challenge_name,
    complete_engine_kinds,
    given_challenge,
    load_named_challenge,
    require_entry_dir,
    resolve_challenge,
)
from podium.cli.output import emit, quoted, set_json
from podium.cli.submission_bundle_cmd import inspect_cmd, package_cmd, selfcheck_cmd
from podium.cli.submission_server_cmd import status_cmd, submit_cmd
from podium.cli.submission_sweep_cmd import sweep_cmd
from podium.untrusted import markup, text
from schemas.challenge import load_challenge

app = typer.Typer(
    help="Participant side: build, check, measure and package a submission.",
    no_args_is_help=True,
)

DirArg = Annotated[Path, typer.Argument(help="The submission directory.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Write into a non-empty directory.")]


def init_cmd(
    directory: DirArg,
    challenge: ChallengeOpt = None,
    engine: Annotated[
        str | None,
        typer.Option(
            help="Engine kind: baseline, vllm or custom (default: the first of these the "
            "challenge allows).",
            autocompletion=complete_engine_kinds,
        ),
    ] = None,
    team: Annotated[str, typer.Option(help="Team name.")] = "my-team",
    entry: Annotated[
        str | None, typer.Option(help="Entry name (default: the directory's name).")
    ] = None,
    base_image: Annotated[
        str | None, typer.Option(help="Base image reference to start FROM.")
    ] = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Write a working submission directory (podium.toml, Dockerfile, README, engine sources).

    Examples:

      podium submission init my-entry

      podium submission init my-entry --challenge fast-gemma --engine vllm --team acme --entry mtp-7
    """
    from submission.scaffold import init_submission

    set_json(json_out)
    spec = resolve_challenge(challenge)
    result = init_submission(
        directory,
        spec,
        kind=engine,
        team=team,
        entry=entry,
        base_image=base_image,
        force=force,
    )

    def human(con: Console) -> None:
        con.print(
            f"[green]wrote[/] {markup(directory)} ({markup(result.kind)} engine, "
            f"{markup(result.challenge)} challenge, {len(result.files)} files)"
        )
        if result.kind_picked:
            con.print(
                text(
                    f"  engine: {result.kind}, the first of baseline, vllm, custom that the "
                    f"{result.challenge} challenge allows (it allows "
                    f"{', '.join(spec.engine.kinds)}; --engine KIND picks another)"
                )
            )
        for note in result.notes:
            con.print(text(f"  note: {note}"))
        con.print(
            f"next: set your knobs in {markup(directory / 'podium.toml')}, then "
            f"`podium submission validate {markup(quoted(directory))}`"
        )

    emit(result.to_dict(), human)


def validate_cmd(
    directory: EntryArg, challenge: ChallengeOpt = None, json_out: JsonOpt = False
) -> None:
    """Check a submission directory; every problem is listed at once with its id and a hint.

    Exit 0 when valid (warnings included), 1 when there are errors.

    Examples:

      podium submission validate my-entry

      podium submission validate my-entry --json
    """
    from submission.validate import validate_submission

    set_json(json_out)
    result = validate_submission(directory, challenge=given_challenge(challenge))
    finish(
        result.to_dict(),
        result.findings,
        f"{directory} is a valid submission",
        f"podium submission selfcheck {quoted(directory)}  (the organizers' measurement on the "
        f"public prompts), then podium submission package {quoted(directory)}",
    )


def knobs_cmd(
    directory: EntryArg,
    challenge: ChallengeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """List the knobs this entry can set: its value, accepted values, what each does.

    The knobs are those of the entry's challenge (podium.toml, or --challenge); each says
    which engine kinds act on it, and those the entry's engine kind ignores come last.

    Examples:

      podium submission knobs my-entry

      podium submission knobs my-entry --challenge fast-gemma --json
    """
    from submission.config import read_config
    from submission.knobs import knob_table, split_by_engine

    set_json(json_out)
    read = read_config(require_entry_dir(directory))
    cfg = read.partial
    if cfg is None:
        finish({"directory": str(directory)}, read.findings, "")
    assert cfg is not None
    if challenge:
        spec = load_named_challenge(challenge, "--challenge")
    else:
        spec = load_named_challenge(cfg.challenge or challenge_name(None), "podium.toml")
    rows = knob_table(spec)
    acts, rest = split_by_engine(rows, cfg.kind)
    data = {
        "directory": str(directory),
        "challenge": spec.id,
        "engine": cfg.kind,
        "set": cfg.config,
        "knobs": [r.to_dict() for r in rows],
        "ignored_by_engine": [r.name for r in rest],
    }

    def human(con: Console) -> None:
        kind = cfg.kind or "?"
        print_knobs(
            con, acts, title=f"knobs the {kind} engine reads ({spec.id})", values=cfg.config
        )
        if rest:
            con.print()
            print_knobs(con, rest, title=f"knobs the {kind} engine ignores", values=cfg.config)
        con.print(text(f"next: set them in [engine.config] of {directory / 'podium.toml'}"))

    emit(data, human)


def freeze_cmd(
    directory: EntryArg,
    challenge: ChallengeOpt = None,
    base_digest: BaseDigestOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Pin the base image, hash every file and write DIR/manifest.json (no bundle, no build).

    Examples:

      podium submission freeze my-entry

      podium submission freeze my-entry --base-digest sha256:0123...cdef --json
    """
    from submission.freeze import freeze

    set_json(json_out)
    frozen = freeze(directory, challenge=given_challenge(challenge), base_digest=base_digest)
    data = {
        "directory": str(directory),
        "ok": frozen.ok,
        "base_image": frozen.base_pin,
        "manifest": frozen.manifest.to_dict() if frozen.manifest else None,
        "findings": [f.to_dict() for f in frozen.findings],
    }
    finish(
        data,
        frozen.findings,
        f"froze {directory / 'manifest.json'}",
        f"podium submission package {quoted(directory)}",
    )


def import_cmd(
    src: Annotated[Path, typer.Argument(help="A Fast Gemma Challenge submission folder.")],
    out: Annotated[Path, typer.Option("-o", "--out", help="The podium submission directory.")],
    challenge: ChallengeOpt = None,
    team: Annotated[str | None, typer.Option(help="Team (default: the original name).")] = None,
    entry: Annotated[str | None, typer.Option(help="Entry (default: the original name).")] = None,
    base_image: Annotated[
        str | None, typer.Option(help="The vLLM image the original ran in.")
    ] = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Turn a Fast Gemma Challenge folder (manifest.json + serve.py) into a podium submission.

    The challenge defaults to the shipped one whose model is the original's model_id.

    Examples:

      podium submission import ./my-fgc-entry -o my-entry

      podium submission import ./my-fgc-entry -o my-entry --team acme --json
    """
    from submission.defaults import VLLM_BASE_IMAGE
    from submission.importer import challenge_of_original, import_submission

    set_json(json_out)
    name = challenge or challenge_of_original(src)
    result = import_submission(
        src,
        out,
        load_challenge(challenge_name(name)),
        team=team,
        entry=entry,
        base_image=base_image or VLLM_BASE_IMAGE,
        force=force,
    )

    def human(con: Console) -> None:
        con.print(
            f"[green]imported[/] {markup(src)} -> {markup(out)} ({len(result.files)} files, "
            f"{len(result.config)} knobs, {len(result.env)} env)"
        )
        for note in result.notes:
            con.print(text(f"  note: {note}"))
        con.print(f"next: podium submission validate {markup(quoted(out))}")

    emit(result.to_dict(), human)


def push_cmd(
    bundle: Annotated[Path, typer.Argument(help="A bundle .tar.gz written by package.")],
    repo: Annotated[str, typer.Option(help="Hub repo ORG/NAME.")],
    repo_type: Annotated[str, typer.Option(help="model or dataset.")] = "model",
    revision: Annotated[str | None, typer.Option(help="Branch to commit to.")] = None,
    path_in_repo: Annotated[str, typer.Option(help="Folder inside the repo.")] = "",
    json_out: JsonOpt = False,
) -> None:
    """Upload the bundle, its .sha256 and its manifest to a Hub repo in one commit.

    Uses HF_ENDPOINT when set and the token of `hf auth login` or HF_TOKEN; records
    the commit in BUNDLE.push.json.

    Examples:

      podium submission push dist/acme-mtp-7.tar.gz --repo acme/fast-gemma-entries

      podium submission push dist/acme-mtp-7.tar.gz --repo acme/entries --repo-type dataset --json
    """
    from submission.push import push_bundle

    set_json(json_out)
    record = push_bundle(
        bundle, repo, repo_type=repo_type, revision=revision, path_in_repo=path_in_repo
    )

    def human(con: Console) -> None:
        con.print(
            f"[green]pushed[/] {markup(bundle.name)} to {markup(repo)} at "
            f"{markup(record['commit_sha'])}"
        )
        con.print(
            "next: tell the organizers the repo and the bundle's sha256 "
            f"({markup(bundle.name)}.sha256 beside it); they verify it blind"
        )

    emit(record, human)


for _name, _command in (
    ("init", init_cmd),
    ("validate", validate_cmd),
    ("knobs", knobs_cmd),
    ("freeze", freeze_cmd),
    ("package", package_cmd),
    ("inspect", inspect_cmd),
    ("import", import_cmd),
    ("push", push_cmd),
    ("submit", submit_cmd),
    ("status", status_cmd),
    ("selfcheck", selfcheck_cmd),
    ("sweep", sweep_cmd),
):
    app.command(_name)(_command)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="submission")
