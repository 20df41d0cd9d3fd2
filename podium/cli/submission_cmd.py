"""``podium submission``: init, validate, freeze, package, inspect, import and push.

Each command is wiring over a function of the ``submission`` package. Exit codes: 0 ok,
1 findings, 2 usage, 3 could not evaluate (Docker, Hub).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from podium.cli.output import JsonOpt, console, emit, json_mode, set_json
from podium.errors import EXIT_FINDINGS
from schemas.challenge import ChallengeSpec, load_challenge
from schemas.findings import Finding, errors_in

app = typer.Typer(
    help="Participant side: build, check and package a submission.", no_args_is_help=True
)

DirArg = Annotated[Path, typer.Argument(help="The submission directory.")]
ChallengeOpt = Annotated[
    str | None,
    typer.Option(
        "--challenge", help="Challenge name or spec file (default: the one podium.toml names)."
    ),
]
BaseDigestOpt = Annotated[
    str | None,
    typer.Option(
        "--base-digest", help="Pin the base image to this sha256:... without asking Docker."
    ),
]


def _spec(name: str | None) -> ChallengeSpec | None:
    return load_challenge(name) if name else None


def _print_findings(con: Console, findings: list[Finding]) -> None:
    for f in findings:
        colour = "red" if f.is_error else "yellow"
        con.print(f"  [{colour}]{f.check_id}[/] {f.where or ''}: ", end="")
        con.print(f.message, markup=False)
        if f.hint:
            con.print(f"      hint: {f.hint}", markup=False, style="dim")


def _finish(data: dict[str, Any], findings: list[Finding], ok_line: str) -> None:
    def human(con: Console) -> None:
        if errors_in(findings):
            con.print(f"[red]{len(errors_in(findings))} problem(s)[/]:")
        elif not findings:
            con.print(f"[green]ok[/] {ok_line}", highlight=False)
        _print_findings(con, findings)
        if findings and not errors_in(findings):
            con.print(f"[green]ok[/] {ok_line}", highlight=False)

    emit(data, human)
    if errors_in(findings):
        raise typer.Exit(EXIT_FINDINGS)


@app.command("init")
def init_cmd(
    directory: DirArg,
    challenge: Annotated[str, typer.Option(help="Challenge name or spec file.")] = "tiny",
    engine: Annotated[
        str, typer.Option(help="Engine kind: baseline, vllm or custom.")
    ] = "baseline",
    team: Annotated[str, typer.Option(help="Team name.")] = "my-team",
    entry: Annotated[str, typer.Option(help="Entry name.")] = "entry-1",
    base_image: Annotated[
        str | None, typer.Option(help="Base image reference to start FROM.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into a non-empty directory.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Write a working submission directory (podium.toml, Dockerfile, README, engine sources).

    Examples:

      podium submission init my-entry

      podium submission init my-entry --challenge fast-gemma --engine vllm --team acme --entry mtp-7
    """
    from submission.scaffold import init_submission

    set_json(json_out)
    result = init_submission(
        directory,
        load_challenge(challenge),
        kind=engine,
        team=team,
        entry=entry,
        base_image=base_image,
        force=force,
    )

    def human(con: Console) -> None:
        con.print(
            f"[green]wrote[/] {directory} ({result.kind} engine, {result.challenge} "
            f"challenge, {len(result.files)} files)"
        )
        for note in result.notes:
            con.print(f"  note: {note}", markup=False)
        con.print(f"next: podium submission validate {directory}", markup=False)

    emit(result.to_dict(), human)


@app.command("validate")
def validate_cmd(
    directory: DirArg, challenge: ChallengeOpt = None, json_out: JsonOpt = False
) -> None:
    """Check a submission directory; every problem is listed at once with its id and a hint.

    Exit 0 when valid, 1 when there are findings.

    Examples:

      podium submission validate my-entry

      podium submission validate my-entry --json
    """
    from submission.validate import validate_submission

    set_json(json_out)
    result = validate_submission(directory, challenge=_spec(challenge))
    _finish(result.to_dict(), result.findings, f"{directory} is a valid submission")


@app.command("freeze")
def freeze_cmd(
    directory: DirArg,
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
    frozen = freeze(directory, challenge=_spec(challenge), base_digest=base_digest)
    data = {
        "directory": str(directory),
        "ok": frozen.ok,
        "base_image": frozen.base_pin,
        "manifest": frozen.manifest.to_dict() if frozen.manifest else None,
        "findings": [f.to_dict() for f in frozen.findings],
    }
    _finish(data, frozen.findings, f"froze {directory}/manifest.json")


@app.command("package")
def package_cmd(
    directory: DirArg,
    out: Annotated[Path, typer.Option("-o", "--out", help="Output folder.")] = Path("dist"),
    challenge: ChallengeOpt = None,
    base_digest: BaseDigestOpt = None,
    no_build: Annotated[bool, typer.Option("--no-build", help="Write the bundle only.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Freeze DIR, write OUT/TEAM-ENTRY.tar.gz (deterministic) + .sha256, build the image.

    The image is built from the bundle as the verifier will open it and tagged
    podium-submission/TEAM-ENTRY:DIGEST12; OUT/TEAM-ENTRY.image.json records it.

    Examples:

      podium submission package my-entry -o dist

      SOURCE_DATE_EPOCH=1767225600 podium submission package my-entry -o dist --no-build --json
    """
    from submission.bundle import package

    set_json(json_out)
    quiet = json_mode()
    con = console(stderr=True)
    on_log = None if quiet else (lambda line: con.print(line, markup=False, style="dim"))
    if quiet or no_build:
        result = package(
            directory,
            out,
            challenge=_spec(challenge),
            base_digest=base_digest,
            build=not no_build,
            on_log=on_log,
        )
    else:
        with con.status("packaging and building the image ..."):
            result = package(
                directory,
                out,
                challenge=_spec(challenge),
                base_digest=base_digest,
                build=True,
                on_log=on_log,
            )
    line = f"{result.bundle.path} sha256 {result.bundle.sha256}" if result.bundle else ""
    if result.image:
        line += (
            f"\n   image {result.image['tag']} ({result.image['image_id'][:19]}, "
            f"{result.image['build_seconds']:.1f} s)"
        )
    _finish(result.to_dict(), result.findings, line)


@app.command("inspect")
def inspect_cmd(
    bundle: Annotated[Path, typer.Argument(help="A bundle .tar.gz.")],
    challenge: Annotated[str, typer.Option(help="Challenge whose limits apply.")] = "tiny",
    json_out: JsonOpt = False,
) -> None:
    """Open a bundle exactly as the verifier's intake does, and report what it finds.

    Examples:

      podium submission inspect dist/acme-mtp-7.tar.gz --challenge fast-gemma
    """
    import tempfile

    from submission.safe_bundle import open_bundle, remove_opened

    set_json(json_out)
    spec = load_challenge(challenge)
    with tempfile.TemporaryDirectory(prefix="podium-inspect-") as tmp:
        opened = open_bundle(bundle, Path(tmp), limits=spec.limits)
        m = opened.manifest
        data = {
            "bundle": str(bundle),
            "sha256": opened.sha256,
            "size": opened.size,
            "ok": opened.ok,
            "challenge": m.challenge.id,
            "team": m.team,
            "entry": m.entry,
            "engine": m.engine.kind,
            "files": len(m.files),
            "findings": [f.to_dict() for f in opened.findings],
        }
        remove_opened(opened)
    _finish(
        data,
        opened.findings,
        f"{bundle}: {m.team}/{m.entry}, {m.engine.kind} engine, {len(m.files)} files",
    )


@app.command("import")
def import_cmd(
    src: Annotated[Path, typer.Argument(help="A Fast Gemma Challenge submission folder.")],
    out: Annotated[
        Path, typer.Option("-o", "--out", help="The podium submission directory to write.")
    ],
    challenge: Annotated[str, typer.Option(help="Challenge name or spec file.")] = "fast-gemma",
    team: Annotated[str | None, typer.Option(help="Team (default: the original name).")] = None,
    entry: Annotated[str | None, typer.Option(help="Entry (default: the original name).")] = None,
    base_image: Annotated[
        str | None, typer.Option(help="The vLLM image the original ran in.")
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into a non-empty directory.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Turn a Fast Gemma Challenge folder (manifest.json + serve.py) into a podium submission.

    Examples:

      podium submission import ./my-fgc-entry -o my-entry

      podium submission import ./my-fgc-entry -o my-entry --team acme --json
    """
    from submission.defaults import VLLM_BASE_IMAGE
    from submission.importer import import_submission

    set_json(json_out)
    result = import_submission(
        src,
        out,
        load_challenge(challenge),
        team=team,
        entry=entry,
        base_image=base_image or VLLM_BASE_IMAGE,
        force=force,
    )

    def human(con: Console) -> None:
        con.print(
            f"[green]imported[/] {src} -> {out} ({len(result.files)} files, "
            f"{len(result.config)} knobs, {len(result.env)} env)"
        )
        for note in result.notes:
            con.print(f"  note: {note}", markup=False)
        con.print(f"next: podium submission validate {out}", markup=False)

    emit(result.to_dict(), human)


@app.command("push")
def push_cmd(
    bundle: Annotated[Path, typer.Argument(help="A bundle .tar.gz written by package.")],
    repo: Annotated[str, typer.Option(help="Hub repo ORG/NAME.")],
    repo_type: Annotated[str, typer.Option(help="model or dataset.")] = "model",
    revision: Annotated[str | None, typer.Option(help="Branch to commit to.")] = None,
    path_in_repo: Annotated[str, typer.Option(help="Folder inside the repo.")] = "",
    json_out: JsonOpt = False,
) -> None:
    """Upload the bundle, its .sha256 and its manifest to a Hub repo in one commit.

    Uses HF_ENDPOINT when set and the token of `huggingface-cli login` or HF_TOKEN; records
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
    emit(
        record,
        lambda con: con.print(
            f"[green]pushed[/] {bundle.name} to {repo} at {record['commit_sha']}", highlight=False
        ),
    )


@app.command("selfcheck")
def selfcheck_cmd(
    source: Annotated[Path, typer.Argument(help="A submission directory or a bundle (.tar.gz).")],
    runner: Annotated[
        str, typer.Option(help="local-docker (the verifier's sandbox) or process (no Docker).")
    ] = "local-docker",
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Where the bundle and report go.")
    ] = Path("out/selfcheck"),
    json_out: JsonOpt = False,
) -> None:
    """Run the organizers' pipeline on the public prompts: the numbers you will be held to.

    Results are SELF-REPORTED, never VERIFIED. A directory is packaged first (no image
    build: the pipeline rebuilds it exactly as the verifier will).

    Examples:

      podium submission selfcheck examples/tiny-baseline

      podium submission selfcheck out/podium-tiny-baseline.tar.gz --runner process --json
    """
    from podium.cli.verify_cmd import bundle_challenge, run_verification
    from submission.bundle import package

    set_json(json_out)
    bundle = source
    if source.is_dir():
        packaged = package(source, out, build=False)
        errors = [f for f in packaged.findings if f.is_error]
        if errors or packaged.bundle is None:
            for f in errors:
                console(stderr=True).print(f"[red]{f.check_id}[/] {f.message}", highlight=False)
            raise typer.Exit(EXIT_FINDINGS)
        bundle = packaged.bundle.path
    config_challenge = bundle_challenge(bundle)
    raise typer.Exit(
        run_verification(
            bundle,
            challenge=config_challenge,
            runner=runner,
            out=out,
            reported_tps=None,
            heldout=None,
            key=None,
            publish=None,
            self_check=True,
            logs=False,
        )
    )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="submission")
