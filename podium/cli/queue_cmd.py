"""``podium queue``: submit bundles for verification and follow their requests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from podium.cli.options import ChallengeOpt, JsonOpt, QueueOpt, load_named_challenge
from podium.cli.output import emit, set_json
from podium.errors import UsageError
from podium.untrusted import text

app = typer.Typer(
    help="""\
The verification queue: one request file per bundle, PENDING → RUNNING →
FINISHED | FAILED | CANCELLED, each change with who and when.

Examples:

  podium queue submit out/acme-fast.tar.gz --queue hf://datasets/org/podium-queue

  podium queue list --queue ./queue --state RUNNING

  podium queue cancel 2c3c4d8d --queue ./queue

--challenge (a name, a spec file, a URL or hf://...) keeps each command to that
challenge's requests: submit refuses a bundle for another, list shows only its requests,
show and cancel refuse a request of another.
""",
    no_args_is_help=True,
)


COLUMNS = ("request_id", "state", "team", "entry", "attempts", "worker", "verdict", "updated_at")


def _table(con: Console, rows: list[dict[str, Any]]) -> None:
    if not rows:
        con.print("no requests")
        return
    table = Table(show_header=True, header_style="bold")
    for col in COLUMNS:
        table.add_column(col)
    for r in rows:
        table.add_row(*(text("" if r.get(c) is None else r[c]) for c in COLUMNS))
    con.print(table)


def _challenge_id(challenge: str) -> str:
    return load_named_challenge(challenge, "--challenge").id


def _same_challenge(request_challenge: str, challenge: str | None) -> None:
    if challenge and request_challenge != (wanted := _challenge_id(challenge)):
        raise UsageError(
            f"the request is for challenge {request_challenge!r}, not {wanted!r}",
            hint="leave out --challenge, or pass the request's own",
            where="--challenge",
        )


@app.command("submit")
def submit(
    bundles: Annotated[
        list[Path], typer.Argument(help="Bundles (.tar.gz); several make one commit.")
    ],
    queue: QueueOpt = None,
    reported_tps: Annotated[
        float | None,
        typer.Option(help="The TPS the participant reported (default: the manifest's)."),
    ] = None,
    challenge: ChallengeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Store each bundle and write a PENDING request (submitting again changes nothing)."""
    from verifier.scale.queue.stores import describe_bundle, open_queue
    from verifier.scale.queue.stores.base import require_challenge

    set_json(json_out)
    described = [describe_bundle(b, reported_tps) for b in bundles]
    if challenge:
        require_challenge(described, _challenge_id(challenge))
    store = open_queue(queue)
    reqs = store.submit(described)
    rows = [r.summary() for r in reqs]
    emit({"queue": store.url, "requests": rows}, lambda con: _table(con, rows))


@app.command("list")
def list_cmd(
    queue: QueueOpt = None,
    state: Annotated[str | None, typer.Option(help="Only this state.")] = None,
    challenge: ChallengeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """The requests, oldest first."""
    from verifier.scale.resources import existing_queue

    set_json(json_out)
    wanted = _challenge_id(challenge) if challenge else None
    store = existing_queue(queue)
    rows = [r.summary() for r in store.list_requests(state.upper() if state else None)]
    rows = [r for r in rows if wanted is None or r["challenge"] == wanted]
    emit({"queue": store.url, "requests": rows}, lambda con: _table(con, rows))


@app.command("show")
def show(
    request_id: Annotated[str, typer.Argument(help="A request id (a unique prefix is enough).")],
    queue: QueueOpt = None,
    challenge: ChallengeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """One request with its whole history."""
    from verifier.scale.resources import existing_queue

    set_json(json_out)
    req = existing_queue(queue).get(request_id)
    _same_challenge(req.doc["challenge"], challenge)

    def human(con: Console) -> None:
        s = req.summary()
        con.print(
            text(f"{s['request_id']} {s['state']} {s['team']}/{s['entry']} ({s['challenge']})")
        )
        for h in req.doc["history"]:
            con.print(text(f"  {h['at']}  {h['state']:<9} {h['by']}  {h.get('note', '')}"))
        if req.doc["result"]:
            for k, v in req.doc["result"].items():
                con.print(text(f"  {k}: {v}"))

    emit(req.doc, human)


@app.command("cancel")
def cancel(
    request_id: Annotated[str, typer.Argument(help="A request id (a unique prefix is enough).")],
    queue: QueueOpt = None,
    challenge: ChallengeOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Cancel a PENDING or RUNNING request (a running worker drops its result)."""
    from verifier.scale.resources import existing_queue

    set_json(json_out)
    store = existing_queue(queue)
    if challenge:
        _same_challenge(store.get(request_id).doc["challenge"], challenge)
    req = store.cancel(request_id)
    emit(req.summary(), lambda con: con.print(text(f"{req.request_id} CANCELLED")))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="queue")
