"""``podium submission``: init, validate, freeze, package, inspect, import, push, selfcheck, sweep.

Each command is wiring over a function of the ``submission`` package, and each ends by
saying what to do next. Exit codes: 0 ok, 1 findings, 2 usage, 3 could not evaluate
(Docker, Hub).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from podium.cli.options import (
    ChallengeOpt,
    DetailsOpt,
    EntryArg,
    JsonOpt,
    LocalRunner,
    LocalRunnerOpt,
    challenge_name,
    complete_engine_kinds,
    load_named_challenge,
    out_option,
    require_entry_dir,
    resolve_challenge,
)
from podium.cli.output import console, emit, json_mode, set_json
from podium.errors import EXIT_FINDINGS, UsageError
from podium.events import Events
from podium.untrusted import markup, text
from schemas.challenge import ChallengeSpec, list_challenges, load_challenge
from schemas.findings import Finding, errors_in

app = typer.Typer(
    help="Participant side: build, check, measure and package a submission.",
    no_args_is_help=True,
)

DirArg = Annotated[Path, typer.Argument(help="The submission directory.")]
BaseDigestOpt = Annotated[
    str | None,
    typer.Option(
        "--base-digest", help="Pin the base image to this sha256:... without asking Docker."
    ),
]
ForceOpt = Annotated[bool, typer.Option("--force", help="Write into a non-empty directory.")]


def _q(path: object) -> str:
    return shlex.quote(str(path))


def _spec(name: str | None) -> ChallengeSpec | None:
    """``--challenge`` when given; otherwise the one podium.toml names (None here)."""
    return load_named_challenge(name, "--challenge") if name else None


def count_line(findings: list[Finding]) -> str:
    """``2 errors, 1 warning``: the counts of what follows, by severity."""
    errors = len(errors_in(findings))
    warnings = sum(1 for f in findings if f.severity == "warning")
    parts = [f"{errors} error" + ("s" if errors != 1 else "")] if errors else []
    if warnings:
        parts.append(f"{warnings} warning" + ("s" if warnings != 1 else ""))
    return ", ".join(parts)


def print_findings(con: Console, findings: list[Finding]) -> None:
    """One line per finding, its severity first: ``error [id] where: message``."""
    for f in findings:
        line = Text("  ")
        line.append(f"{f.severity:<7}", style="red" if f.is_error else "yellow")
        line.append(f" [{f.check_id}]")
        if f.where:
            line.append_text(text(f" {f.where}"))
        line.append(": ")
        line.append_text(text(f.message))
        con.print(line)
        if f.hint:
            con.print(text(f"          hint: {f.hint}", "dim"))


def _finish(
    data: dict[str, Any], findings: list[Finding], ok_line: str, next_step: str | None = None
) -> None:
    """Print findings, then ``ok_line`` and ``next_step`` unless an error stopped it."""

    def human(con: Console) -> None:
        errors = errors_in(findings)
        if findings:
            con.print(Text(f"{count_line(findings)}:", style="red" if errors else "yellow"))
        print_findings(con, findings)
        if errors:
            con.print("next: fix the problems above and run the command again")
            return
        con.print(Text.assemble(("ok ", "green"), text(ok_line, multiline=True)))
        if next_step:
            con.print(Text.assemble("next: ", text(next_step)))

    emit(data, human)
    if errors_in(findings):
        raise typer.Exit(EXIT_FINDINGS)


@app.command("init")
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
            f"`podium submission validate {markup(_q(directory))}`"
        )

    emit(result.to_dict(), human)


@app.command("validate")
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
    result = validate_submission(directory, challenge=_spec(challenge))
    _finish(
        result.to_dict(),
        result.findings,
        f"{directory} is a valid submission",
        f"podium submission selfcheck {_q(directory)}  (the organizers' measurement on the "
        f"public prompts), then podium submission package {_q(directory)}",
    )


@app.command("knobs")
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
    from podium.cli.challenge_view import print_knobs
    from submission.config import read_config
    from submission.knobs import knob_table

    set_json(json_out)
    read = read_config(require_entry_dir(directory))
    cfg = read.partial
    if cfg is None:
        _finish({"directory": str(directory)}, read.findings, "")
    assert cfg is not None
    if challenge:
        spec = load_named_challenge(challenge, "--challenge")
    else:
        spec = load_named_challenge(cfg.challenge or challenge_name(None), "podium.toml")
    rows = knob_table(spec)
    acts = [r for r in rows if cfg.kind == "custom" or cfg.kind in r.engines]
    rest = [r for r in rows if r not in acts]
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


@app.command("freeze")
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
    frozen = freeze(directory, challenge=_spec(challenge), base_digest=base_digest)
    data = {
        "directory": str(directory),
        "ok": frozen.ok,
        "base_image": frozen.base_pin,
        "manifest": frozen.manifest.to_dict() if frozen.manifest else None,
        "findings": [f.to_dict() for f in frozen.findings],
    }
    _finish(
        data,
        frozen.findings,
        f"froze {directory / 'manifest.json'}",
        f"podium submission package {_q(directory)}",
    )


class _BuildProgress:
    """One status line while the image builds (``Step 3/9 : RUN ...``); the log goes to
    a file, and to the screen only with ``--logs``."""

    STEP = re.compile(r"^Step (\d+/\d+) : (.*)$")

    def __init__(self, con: Console, *, show_logs: bool) -> None:
        self.con, self.show_logs = con, show_logs
        self.status: Any = None

    def __enter__(self) -> _BuildProgress:
        if self.con.is_terminal and not self.show_logs:
            self.status = self.con.status("packaging ...")
            self.status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.status is not None:
            self.status.stop()

    def line(self, line: str) -> None:
        if self.show_logs:
            self.con.print(text(line, "dim"))
        elif self.status is not None and (m := self.STEP.match(line.strip())):
            self.status.update(Text(f"building the image: step {m[1]}: {m[2][:60]}"))


@app.command("package")
def package_cmd(
    directory: EntryArg,
    out: Annotated[Path, out_option("Folder for the bundle and its image record")] = Path("dist"),
    challenge: ChallengeOpt = None,
    base_digest: BaseDigestOpt = None,
    no_build: Annotated[bool, typer.Option("--no-build", help="Write the bundle only.")] = False,
    logs: Annotated[bool, typer.Option("--logs", help="Stream the image build log.")] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace a bundle another directory packaged.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Freeze DIR, write OUT/TEAM-ENTRY.tar.gz (deterministic) + .sha256, build the image.

    The image is built from the bundle as the verifier will open it and tagged
    podium-submission/TEAM-ENTRY:DIGEST12; OUT/TEAM-ENTRY.image.json records it and
    OUT/TEAM-ENTRY.build.log keeps the build log (--logs shows it as it runs).

    Examples:

      podium submission package my-entry -o dist

      SOURCE_DATE_EPOCH=1767225600 podium submission package my-entry -o dist --no-build --json
    """
    from submission.bundle import package

    set_json(json_out)
    progress = _BuildProgress(console(stderr=True), show_logs=logs and not json_mode())
    with progress:
        result = package(
            directory,
            out,
            challenge=_spec(challenge),
            base_digest=base_digest,
            build=not no_build,
            on_log=progress.line,
            force=force,
        )
    line = f"packaged {directory}"
    if result.bundle:
        line += (
            f"\n   bundle {result.bundle.path} ({result.bundle.size:,} bytes, "
            f"sha256 {result.bundle.sha256[:16]}...)"
        )
    if result.image:
        line += (
            f"\n   image  {result.image['tag']} ({result.image['image_id'][:19]}, "
            f"built in {result.image['build_seconds']:.1f} s; log {result.build_log})"
        )
    bundle = _q(result.bundle.path) if result.bundle else "BUNDLE"
    _finish(
        result.to_dict(),
        result.findings,
        line,
        f"podium submission selfcheck {bundle}, then hand the bundle to the organizers, "
        f"e.g. podium submission push {bundle} --repo ORG/NAME",
    )


@app.command("inspect")
def inspect_cmd(
    bundle: Annotated[Path, typer.Argument(help="A bundle .tar.gz.")],
    challenge: ChallengeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Open a bundle exactly as the verifier's intake does, and report what it finds.

    The bundle is checked against the challenge's rules: --challenge when given, else the
    one its manifest names.

    Examples:

      podium submission inspect dist/acme-mtp-7.tar.gz

      podium submission inspect dist/acme-mtp-7.tar.gz --challenge fast-gemma --json
    """
    import tempfile

    from podium.cli.options import bundle_challenge
    from submission.safe_bundle import open_bundle, remove_opened

    set_json(json_out)
    spec = resolve_challenge(challenge, None if challenge else bundle_challenge(bundle))
    from verifier.intake import rule_findings

    with tempfile.TemporaryDirectory(prefix="podium-inspect-") as tmp:
        opened = open_bundle(bundle, Path(tmp), limits=spec.limits)
        m = opened.manifest
        findings = [*opened.findings, *rule_findings(m, spec)]
        data = {
            "bundle": str(bundle),
            "sha256": opened.sha256,
            "size": opened.size,
            "ok": not errors_in(findings),
            "challenge": spec.id,
            "bundle_challenge": m.challenge.id,
            "team": m.team,
            "entry": m.entry,
            "engine": m.engine.kind,
            "files": len(m.files),
            "findings": [f.to_dict() for f in findings],
        }
        remove_opened(opened)
    _finish(
        data,
        findings,
        f"{bundle}: {m.team}/{m.entry}, {m.engine.kind} engine, {len(m.files)} files, "
        f"within the {spec.id} challenge's rules",
        f"podium submission selfcheck {_q(bundle)}",
    )


def _challenge_of_original(src: Path) -> str | None:
    """The shipped challenge whose pinned model is the original manifest's ``model_id``."""
    from schemas.validate import read_json

    try:
        model = read_json(src / "manifest.json").get("model_id")
    except (AttributeError, UsageError):
        return None
    matches = [n for n in list_challenges() if load_challenge(n).model.repo_id == model]
    return matches[0] if len(matches) == 1 else None


@app.command("import")
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
    from submission.importer import import_submission

    set_json(json_out)
    name = challenge or _challenge_of_original(src)
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
        con.print(f"next: podium submission validate {markup(_q(out))}")

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


@app.command("selfcheck")
def selfcheck_cmd(
    source: Annotated[Path, typer.Argument(help="A submission directory or a bundle (.tar.gz).")],
    challenge: ChallengeOpt = None,
    runner: LocalRunnerOpt = LocalRunner.local_docker,
    out: Annotated[Path, out_option("Folder for the bundle and the report")] = Path(
        "out/selfcheck"
    ),
    logs: Annotated[bool, typer.Option("--logs", help="Stream the image build log.")] = False,
    details: DetailsOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Run the organizers' pipeline on the public prompts: the numbers you will be held to.

    Results are SELF-REPORTED, never VERIFIED, and never signed. A directory is packaged
    first (no image build: the pipeline rebuilds it exactly as the verifier will).

    Examples:

      podium submission selfcheck examples/tiny-baseline

      podium submission selfcheck out/podium-tiny-baseline.tar.gz --runner process --json
    """
    from podium.cli.verification import run_verification
    from submission.bundle import package

    set_json(json_out)
    if not source.exists():
        raise UsageError(
            f"no such directory or bundle: {source}",
            hint="pass a submission directory (podium submission init DIR writes one) or a "
            "bundle .tar.gz",
            where=str(source),
        )
    bundle = source
    if source.is_dir():
        packaged = package(source, out, challenge=_spec(challenge), build=False, force=True)
        if errors_in(packaged.findings) or packaged.bundle is None:
            _finish(packaged.to_dict(), packaged.findings, "")
        assert packaged.bundle is not None
        bundle = packaged.bundle.path
    raise typer.Exit(
        run_verification(
            bundle,
            challenge=challenge,
            runner=runner.value,
            out=out,
            reported_tps=None,
            heldout=None,
            key=None,
            publish=None,
            self_check=True,
            logs=logs,
            source=source,
            details=details,
        )
    )


def _pipeline_measure(spec: ChallengeSpec, runner: LocalRunner) -> Any:
    """One point of a sweep: the pipeline ``selfcheck`` runs (public prompts, unsigned);
    for the held-out runs that give the margin, the pipeline ``verify`` runs (the
    challenge's own held-out set, unsigned)."""
    from verifier.pipeline import VerifyRequest, verify
    from verifier.runners.factory import make_runner, reference_runner

    def measure(bundle: Path, out: Path, heldout: bool, events: Events) -> dict[str, Any]:
        req = VerifyRequest(
            bundle=bundle,
            spec=spec,
            runner=make_runner(runner.value),
            out_dir=out,
            self_check=not heldout,
            reference=reference_runner,
        )
        return verify(req, events).report

    return measure


def _need_sweep_extra(search: bool) -> None:
    import importlib.util

    missing = [
        m
        for m in (["optuna"] if search else []) + ["matplotlib"]
        if importlib.util.find_spec(m) is None
    ]
    if missing:
        raise UsageError(
            f"the sweep needs {' and '.join(missing)}, which are not installed",
            hint="pip install 'podium[sweep]'",
        )


@app.command("sweep")
def sweep_cmd(
    directory: EntryArg,
    knob: Annotated[
        list[str],
        typer.Option(
            "--knob",
            help="NAME=V1,V2,... (JSON values; none unsets the knob) or NAME=LO..HI[:STEP]; "
            "repeat for a grid.",
        ),
    ],
    search: Annotated[
        str | None,
        typer.Option(
            "--search",
            help="Let optuna choose the points within a budget: N points or Nm minutes.",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the order (and of the search).")] = 0,
    baseline_every: Annotated[
        int, typer.Option(help="Measure the directory's own config again after every N points.")
    ] = 1,
    margin: Annotated[
        float | None,
        typer.Option(
            help="PPL kept under the cap (default: measured on the held-out set, "
            "from the front's points)."
        ),
    ] = None,
    remeasure: Annotated[
        bool, typer.Option("--remeasure", help="Measure every point again (a new round).")
    ] = False,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed", help="Measure again the points that could not be evaluated."
        ),
    ] = False,
    challenge: ChallengeOpt = None,
    runner: LocalRunnerOpt = LocalRunner.local_docker,
    out: Annotated[Path, out_option("Folder for the sweep's file, runs, plot and answer")] = Path(
        "out/sweep"
    ),
    base_digest: BaseDigestOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Measure DIR with its knobs changed, point by point, and recommend the fastest safe one.

    Each point runs the organizers' pipeline as selfcheck does (SELF-REPORTED), in a seeded
    random order, with DIR's own config re-measured between points. OUT/sweep.jsonl gets
    one line per run; run the same command again to resume (only what is left is
    measured). Then the Pareto front's points run once on the held-out set, which gives
    the margin; OUT/recommended.podium.toml and .diff hold the answer, OUT/sweep.png the
    picture. Exit 0 with a recommendation, 1 when no point passes.

    Examples:

      podium submission sweep examples/tiny-vllm --knob SLIDING_WINDOW=16,32,none

      podium submission sweep my-entry --knob SLIDING_WINDOW=8..64 --search 10 -o out/s2

      podium submission sweep my-entry --knob MAX_MODEL_LEN=1024,2048 --runner process --json
    """
    from submission.config import load_config
    from submission.sweep import Budget, SweepEvents, SweepRequest, parse_knob, run_sweep

    set_json(json_out)
    require_entry_dir(directory)
    _need_sweep_extra(search is not None)
    from verifier.runners.factory import runner_info

    denied = runner_info(runner.value).unsandboxed()
    if denied and margin is None:
        raise UsageError(
            f"{denied}, so it cannot measure the margin on the held-out set",
            hint="give the margin (--margin 0.1), or sweep with --runner local-docker",
        )
    cfg, problems = load_config(directory)
    if cfg is None:
        _finish({"directory": str(directory)}, problems, "")
    assert cfg is not None
    spec = resolve_challenge(challenge, cfg.challenge)
    req = SweepRequest(
        directory=directory,
        out=out,
        spec=spec,
        knobs=[parse_knob(k) for k in knob],
        seed=seed,
        baseline_every=baseline_every,
        search=Budget.parse(search) if search is not None else None,
        margin=margin,
        remeasure=remeasure,
        retry_failed=retry_failed,
        base_digest=base_digest,
    )
    measure = _pipeline_measure(spec, runner)
    if json_mode():
        result = run_sweep(req, measure, SweepEvents())
    else:
        from podium.cli.sweep_live import LiveSweep

        con = console()
        con.print(
            f"sweeping {markup(directory)} on {spec.id} {spec.version} (self-check on the "
            f"public prompts; runner {runner.value}; results in {markup(out / 'sweep.jsonl')})"
        )
        with LiveSweep(con) as live:
            result = run_sweep(req, measure, live)

    def human(con: Console) -> None:
        from podium.cli.sweep_live import answer_table

        a = result.answer
        con.print(answer_table(a))
        d = a.drift
        if d.get("baseline_tps"):
            con.print(
                f"baseline TPS over the sweep: {d['min']:.1f} .. {d['max']:.1f} "
                f"(spread {d['spread']:.1%} of the median, {len(d['baseline_tps'])} runs)"
            )
        for line in a.lines:
            con.print(text(line))
        if result.diff is not None:
            diff = result.diff.read_text(encoding="utf-8")
            con.print(f"the podium.toml change ({markup(result.diff)}):")
            con.print(
                text(diff.rstrip() or "  (none: keep the config you have)", "dim", multiline=True)
            )
        for note in result.notes:
            con.print(text(f"note: {note}"))
        if result.plot is not None:
            con.print(f"plot: {markup(result.plot)}")
        if result.recommendation is not None:
            con.print(
                f"next: cp {markup(_q(result.recommendation))} "
                f"{markup(_q(directory / 'podium.toml'))}, "
                f"then `podium submission package {markup(_q(directory))}`"
            )
        else:
            con.print("next: widen the knobs' values, or fix the failing checks above")

    emit(result.to_dict(), human)
    if result.answer.recommended is None:
        raise typer.Exit(EXIT_FINDINGS)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="submission")
