"""``podium submission sweep``: measure a directory with its knobs changed, recommend one.

The sweep itself is ``submission.sweep``'s; this module hands it the organizers' pipeline
as its ``measure`` (``submission`` never imports the verifier) and draws it
(``sweep_live``). Mounted by ``submission_cmd``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from podium.cli.findings_view import finish
from podium.cli.options import (
    BaseDigestOpt,
    ChallengeOpt,
    EntryArg,
    JsonOpt,
    LocalRunner,
    LocalRunnerOpt,
    out_option,
    require_entry_dir,
    resolve_challenge,
)
from podium.cli.output import console, emit, json_mode, set_json
from podium.errors import EXIT_FINDINGS, UsageError
from podium.events import Events
from podium.untrusted import markup
from schemas.challenge import ChallengeSpec

if TYPE_CHECKING:
    from submission.sweep import SweepRequest, SweepResult
    from submission.sweep.runner import Measure

KnobOpt = Annotated[
    list[str],
    typer.Option(
        "--knob",
        help="NAME=V1,V2,... (JSON values; none unsets the knob) or NAME=LO..HI[:STEP]; "
        "repeat for a grid.",
    ),
]
SearchOpt = Annotated[
    str | None,
    typer.Option(
        "--search",
        help="Let optuna choose the points within a budget: N points or Nm minutes.",
    ),
]
SeedOpt = Annotated[int, typer.Option(help="Seed of the order (and of the search).")]
BaselineEveryOpt = Annotated[
    int, typer.Option(help="Measure the directory's own config again after every N points.")
]
MarginOpt = Annotated[
    float | None,
    typer.Option(
        help="PPL kept under the cap (default: measured on the held-out set, "
        "from the front's points)."
    ),
]
RemeasureOpt = Annotated[
    bool, typer.Option("--remeasure", help="Measure every point again (a new round).")
]
RetryFailedOpt = Annotated[
    bool,
    typer.Option("--retry-failed", help="Measure again the points that could not be evaluated."),
]
SweepOutOpt = Annotated[Path, out_option("Folder for the sweep's file, runs, plot and answer")]


def sweep_cmd(
    directory: EntryArg,
    knob: KnobOpt,
    search: SearchOpt = None,
    seed: SeedOpt = 0,
    baseline_every: BaselineEveryOpt = 1,
    margin: MarginOpt = None,
    remeasure: RemeasureOpt = False,
    retry_failed: RetryFailedOpt = False,
    challenge: ChallengeOpt = None,
    runner: LocalRunnerOpt = LocalRunner.local_docker,
    out: SweepOutOpt = Path("out/sweep"),
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
    from submission.sweep import Budget, SweepRequest, parse_knob, require_extras

    set_json(json_out)
    require_entry_dir(directory)
    require_extras(search is not None)
    _require_margin_or_sandbox(runner, margin)
    cfg, problems = load_config(directory)
    if cfg is None:
        finish({"directory": str(directory)}, problems, "")
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
    result = _run(req, _pipeline_measure(spec, runner), runner)

    def human(con: Console) -> None:
        from podium.cli.sweep_live import print_result

        print_result(con, result, directory)

    emit(result.to_dict(), human)
    if result.answer.recommended is None:
        raise typer.Exit(EXIT_FINDINGS)


def _require_margin_or_sandbox(runner: LocalRunner, margin: float | None) -> None:
    """A runner with no sandbox never sees the held-out set, so the margin must be given."""
    from verifier.runners.factory import runner_info

    denied = runner_info(runner.value).unsandboxed()
    if denied and margin is None:
        raise UsageError(
            f"{denied}, so it cannot measure the margin on the held-out set",
            hint="give the margin (--margin 0.1), or sweep with --runner local-docker",
        )


def _run(req: SweepRequest, measure: Measure, runner: LocalRunner) -> SweepResult:
    """``run_sweep``, drawn live for a person (nothing drawn with ``--json``)."""
    from submission.sweep import SweepEvents, run_sweep

    if json_mode():
        return run_sweep(req, measure, SweepEvents())
    from podium.cli.sweep_live import LiveSweep

    con, spec, directory, out = console(), req.spec, req.directory, req.out
    con.print(
        f"sweeping {markup(directory)} on {spec.id} {spec.version} (self-check on the "
        f"public prompts; runner {runner.value}; results in {markup(out / 'sweep.jsonl')})"
    )
    with LiveSweep(con) as live:
        return run_sweep(req, measure, live)


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
