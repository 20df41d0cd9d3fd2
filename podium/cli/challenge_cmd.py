"""``podium challenge``: list and show challenge specs, and lock one before it opens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from podium.cli.challenge_view import describe
from podium.cli.options import JsonOpt, complete_challenges, load_named_challenge
from podium.cli.output import console, emit, json_mode, set_json
from podium.errors import EXIT_FINDINGS, UsageError
from podium.untrusted import text
from schemas.challenge import ChallengeSpec, list_challenges, load_challenge
from submission.knobs import knob_table

app = typer.Typer(help="Challenge specs: the rules every result depends on.", no_args_is_help=True)


@app.command("list")
def list_cmd(json_out: JsonOpt = False) -> None:
    """List the challenges shipped with podium.

    Example: podium challenge list --json
    """
    set_json(json_out)
    specs = [load_challenge(name) for name in list_challenges()]
    data: list[dict[str, Any]] = [
        {
            "id": s.id,
            "version": s.version,
            "title": s.title,
            "model": s.model.repo_id,
            "hardware": s.hardware.describe(),
            "ppl_cap": round(s.quality.cap, 6),
        }
        for s in specs
    ]

    def human(con: Console) -> None:
        table = Table(title="challenges")
        for col in ("id", "version", "title", "model", "hardware", "PPL cap"):
            table.add_column(col)
        for d in data:
            cells = (d["id"], d["version"], d["title"], d["model"], d["hardware"])
            table.add_row(*(text(c) for c in cells), f"{d['ppl_cap']:.4f}")
        con.print(table)

    emit(data, human)


@app.command("show")
def show_cmd(
    name: Annotated[
        str,
        typer.Argument(
            help="A shipped challenge name or a spec file.", autocompletion=complete_challenges
        ),
    ],
    json_out: JsonOpt = False,
) -> None:
    """Show one challenge spec: its model, hardware, PPL cap, workload, rules and knobs.

    The knob table lists every knob the challenge allows: what it does, the values it
    accepts (and the value a rule pins), and the engine kinds that act on it.

    Examples:

      podium challenge show fast-gemma

      podium challenge show tiny --json
    """
    from verifier.lock import unlocked_parts

    set_json(json_out)
    spec = load_named_challenge(name, "NAME")
    doc = spec.to_dict()
    doc["computed"] = {
        "ppl_cap": spec.quality.cap,
        "tokens_per_trial": spec.tps.tokens_per_trial,
        "spec_sha256": spec.sha256,
        "unlocked": [p.to_dict() for p in unlocked_parts(spec)],
    }
    doc["knobs"] = [row.to_dict() for row in knob_table(spec)]
    emit(doc, lambda con: describe(spec, con))


@app.command("lock")
def lock_cmd(
    spec_ref: Annotated[
        str,
        typer.Argument(
            metavar="SPEC",
            help="The spec to lock: a shipped name, a file, a URL or hf://...",
            autocompletion=complete_challenges,
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Where the locked spec is written.")],
    weights: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="A local snapshot of the model: every file is pinned."),
    ] = None,
    drafter: Annotated[
        Path | None,
        typer.Option(metavar="DIR", help="A local snapshot of the spec's drafter, likewise."),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(
            metavar="REF",
            help="The base image to pin from the local Docker engine (default, when the spec "
            "names one: its own, without the digest).",
        ),
    ] = None,
    no_image: Annotated[
        bool, typer.Option("--no-image", help="Leave the base image as the spec has it.")
    ] = False,
    pubkey: Annotated[
        list[Path] | None,
        typer.Option(metavar="PEM", help="An organizer public key to pin; repeat for several."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite OUT.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Write a locked copy of a spec: the pins a challenge that requires isolation needs.

    The weight files (path, size, sha256) are hashed from a local snapshot, the base
    image's digest comes from the local Docker engine (digest_confirmed: true), and
    --pubkey pins the organizer key viewers check rows with. Workers (and the server)
    refuses a spec that requires isolation and is not locked. Exit 1 when a part is still
    unlocked (the file is written; the parts are named).

    Examples:

      podium challenge lock fast-gemma --weights ~/gemma-4-E4B-it --image
      vllm/vllm-openai:v0.32.0 --pubkey keys/organizer.pem.pub -o fast-gemma.locked.json

      podium challenge lock tiny --pubkey keys/organizer.pem.pub -o tiny.locked.json --json
    """
    from verifier.lock import default_image, lock_document

    set_json(json_out)
    spec = load_named_challenge(spec_ref, "SPEC")
    if out.exists() and not force:
        raise UsageError(f"{out} exists", hint="pass --force to overwrite it, or another -o")
    if image is None and not no_image:
        image = default_image(spec)
    with _HashBar(enabled=not json_mode()) as bar:
        doc, pinned = lock_document(
            spec,
            weights=weights,
            drafter=drafter,
            image=image,
            pubkeys=pubkey or [],
            progress=bar.update,
        )
    result = _write_locked(doc, pinned, out)
    emit(result, lambda con: _lock_human(con, result))
    if not result["locked"]:
        raise typer.Exit(EXIT_FINDINGS)


def _write_locked(doc: dict[str, Any], pinned: dict[str, Any], out: Path) -> dict[str, Any]:
    """Write the locked spec to ``out``; what ``lock --json`` prints."""
    from verifier.lock import unlocked_parts

    locked = ChallengeSpec.from_dict(doc)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    left = [p.to_dict() for p in unlocked_parts(locked)]
    return {
        "out": str(out),
        "challenge": locked.id,
        "spec_sha256": locked.sha256,
        "pinned": pinned,
        "unlocked": left,
        "locked": not left,
    }


def _lock_human(con: Console, result: dict[str, Any]) -> None:
    for part, what in result["pinned"].items():
        shown = f"{what} files" if isinstance(what, int) else what
        con.print(text(f"pinned {part}: {shown}"))
    for p in result["unlocked"]:
        con.print(text(f"still unlocked: {p['part']} ({p['why']}); lock it with {p['how']}"))
    state = "locked" if result["locked"] else "NOT locked"
    con.print(text(f"wrote {result['out']} ({state})"))


class _HashBar:
    """A byte bar per file while weights are hashed (humans on a terminal only)."""

    def __init__(self, *, enabled: bool) -> None:
        from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

        con = console(stderr=True)
        self.bar = (
            Progress(
                *Progress.get_default_columns(),
                DownloadColumn(),
                TransferSpeedColumn(),
                console=con,
                transient=True,
            )
            if enabled and con.is_terminal
            else None
        )
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> _HashBar:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def update(self, name: str, done: int, size: int) -> None:
        if self.bar is None:
            return
        if name not in self.tasks:
            self.tasks[name] = self.bar.add_task(f"sha256 {name}", total=size)
        self.bar.update(self.tasks[name], completed=done)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="challenge")
