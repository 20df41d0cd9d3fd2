"""``podium heldout check``: can a held-out set serve a challenge? Asked before it opens."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from podium.cli.options import ChallengeOpt, JsonOpt, resolve_challenge
from podium.cli.output import emit, set_json
from podium.errors import EXIT_FINDINGS, UsageError
from podium.untrusted import text

app = typer.Typer(help="The private held-out set a challenge is verified on.", no_args_is_help=True)

_MARK = {"ok": "ok", "failed": "FAILED", "skipped": "skipped"}


@app.command("check")
def check_cmd(
    heldout: Annotated[
        str,
        typer.Argument(
            metavar="DIR", help="The set: a folder with prompts.jsonl and ppl.jsonl, or hf://..."
        ),
    ],
    challenge: ChallengeOpt = None,
    weights: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The model's tokenizer files, for prompt lengths (default: the shipped model, "
            "else the local Hub cache at the pinned revision).",
        ),
    ] = None,
    tps: Annotated[
        float | None,
        typer.Option(
            help="Size the set for engines this fast: passes a trial = ceil(min_trial_seconds "
            "x TPS / tokens a pass) (default: the spec's baseline TPS)."
        ),
    ] = None,
    public: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="The public set (prompts.jsonl, ppl.jsonl) to compare with, instead of the "
            "spec's.",
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """Check a held-out set against a challenge spec before the challenge opens.

    Reports the counts against what the spec needs (num_prompts x passes x max_trials
    prompts), duplicates, prompts and PPL records shared with the public set, each
    record against its schema (podium schema show heldout-prompt / heldout-ppl), and
    token lengths against the spec's datasets.max_prompt_tokens / max_ppl_tokens. A
    question that cannot be answered here (no tokenizer, the public set out of reach) is
    marked skipped with why. Exit 1 when the set cannot serve the spec.

    Examples:

      podium heldout check /secure/heldout -c fast-gemma.locked.json --tps 1100

      podium heldout check ./heldout -c tiny --json
    """
    from verifier.heldout import check_heldout, tokenizer_for

    set_json(json_out)
    spec = resolve_challenge(challenge)
    if tps is not None and tps <= 0:
        raise UsageError("--tps must be above 0", where="--tps")
    reader = _public_reader(public) if public is not None else None
    renderer, why = tokenizer_for(spec, weights)
    result = check_heldout(
        heldout, spec, tps=tps, renderer=renderer, renderer_missing=why, public=reader
    )
    doc = result.to_dict()

    def human(con: Console) -> None:
        c = result.counts
        con.print(text(f"{result.challenge}: {result.source}"))
        con.print(text(f"  needs {c['prompts_needed']} prompts ({c['formula']})"))
        for q in result.questions:
            con.print(text(f"  {q.name:<15} {_MARK[q.status]:<8} {q.detail}"))
        con.print(text("can serve the spec" if result.ok else "CANNOT serve the spec"))

    emit(doc, human)
    if not result.ok:
        raise typer.Exit(EXIT_FINDINGS)


def _public_reader(public: Path) -> Any:
    """``--public DIR``: its rows of each kind (``prompts``, ``ppl``)."""
    from verifier.datasets import read_jsonl

    if not public.is_dir():
        raise UsageError(f"--public {public}: no such directory", where="--public")
    files = {"prompts": public / "prompts.jsonl", "ppl": public / "ppl.jsonl"}

    def reader(kind: str) -> list[dict[str, Any]]:
        return read_jsonl(files[kind])

    return reader


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="heldout")
