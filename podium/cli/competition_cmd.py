"""``podium server`` (the competition's front door) and ``podium competition`` (its admin).

Wiring over ``competition``: the server opens the door from the organizer's files and
serves it; the admin commands call the server's admin API with the admin token.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from podium.cli.leaderboard_cmd import port_number
from podium.cli.options import JsonOpt, KeyOpt
from podium.cli.output import console, emit, emit_line, set_json
from podium.untrusted import markup

SERVER_HELP = """\
Serve a competition: the participants' only way in, and the workers' queue.

Participants submit with their Hugging Face token (`podium submission submit BUNDLE
--server URL`); the Hub's whoami names them (HF_ENDPOINT sets the Hub), the roster puts
them in a team, quotas count per user and team over 24 hours. Workers claim with a worker
token (`podium worker --server URL --worker-token W`); the server publishes each signed
report to --store with the team and user it authenticated. With --json it prints one
line, {"url": ...}, once it listens.

Examples:

  podium server --db sqlite:///competition.db --roster roster.toml --challenge fast-gemma
  --store hf://datasets/org/board --key organizer.pem --admin-token "$ADMIN" --worker-token "$W1"

  podium server --db postgresql://podium@127.0.0.1:5432/podium --roster roster.toml
  --challenge ./fast-gemma.locked.json --store ./board --key k.pem --port 8000
  --admin-token "$ADMIN" --worker-token "$W1" --worker-token "$W2" --quota-user 5
"""

ADMIN_HELP = """\
The organizer's view of a running competition server (needs its admin token).

Examples:

  podium competition counts --server http://127.0.0.1:8000 --admin-token "$ADMIN"

  podium competition list --state FAILED --team acme --server URL --admin-token "$ADMIN"

  podium competition retry 3f2a --server URL --admin-token "$ADMIN"
"""

admin_app = typer.Typer(help=ADMIN_HELP, no_args_is_help=True)

ServerOpt = Annotated[str, typer.Option("--server", help="The competition server's URL.")]
AdminTokenOpt = Annotated[
    str | None,
    typer.Option("--admin-token", help="The server's admin token (default: $PODIUM_ADMIN_TOKEN)."),
]


def server_cmd(
    db: Annotated[str, typer.Option("--db", help="sqlite:///PATH or postgresql://...")],
    roster: Annotated[Path, typer.Option("--roster", help="The roster (TOML).")],
    challenge: Annotated[str, typer.Option("--challenge", "-c", help="Challenge name or spec.")],
    admin_token: Annotated[str, typer.Option("--admin-token", help="The organizer's token.")],
    worker_token: Annotated[
        list[str], typer.Option("--worker-token", help="A token workers claim with (repeat).")
    ],
    store: Annotated[
        str | None, typer.Option("--store", "-s", help="Publish rows here: ./dir or hf://.")
    ] = None,
    key: KeyOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", parser=port_number, help="Port (0: any free one).")
    ] = 8000,
    quota_user: Annotated[
        int | None,
        typer.Option(help="Submissions per user per window (default: roster, spec, 5)."),
    ] = None,
    quota_team: Annotated[
        int | None,
        typer.Option(help="Submissions per team per window (default: roster, spec, 20)."),
    ] = None,
    intake_processes: Annotated[
        int, typer.Option(help="Processes that read submitted bundles (0: the server's own).")
    ] = 2,
    json_out: JsonOpt = False,
) -> None:
    from podium.extras import SERVER_MODULES, require_installed

    require_installed("podium server", SERVER_MODULES, extra="server")
    from competition.app import open_door, serve
    from podium.cli.options import require_signing_key, signing_key

    set_json(json_out)
    door = open_door(
        db=db,
        roster=roster,
        challenge=challenge,
        admin_token=admin_token,
        worker_tokens=worker_token,
        store=store,
        key=require_signing_key(key) if store else signing_key(key),
        quota_user=quota_user,
        quota_team=quota_team,
        intake_processes=intake_processes,
    )

    def ready(url: str) -> None:
        if json_out:
            emit_line({"url": url, "challenge": door.cfg.spec.id})
        else:
            console(stderr=True).print(f"serving {markup(url)} (Ctrl-C to stop)")

    serve(door, host=host, port=port, ready=ready)


def _admin(server: str, token: str | None) -> Any:
    from competition.client import DoorClient
    from podium.errors import UsageError

    token = token or os.environ.get("PODIUM_ADMIN_TOKEN")
    if not token:
        raise UsageError("the admin commands need the admin token", hint="pass --admin-token T")
    return DoorClient(server, token)


def counts_cmd(server: ServerOpt, admin_token: AdminTokenOpt = None, json_out: JsonOpt = False):
    """Requests by state."""
    set_json(json_out)
    doc = _admin(server, admin_token).get("/v1/admin/counts")
    emit(doc, lambda con: con.print("  ".join(f"{k} {v}" for k, v in doc["counts"].items())))


def list_cmd(
    server: ServerOpt,
    admin_token: AdminTokenOpt = None,
    state: Annotated[str | None, typer.Option(help="Only this state.")] = None,
    team: Annotated[str | None, typer.Option(help="Only this team.")] = None,
    user: Annotated[str | None, typer.Option(help="Only this submitter.")] = None,
    json_out: JsonOpt = False,
) -> None:
    """Requests, one line each, filtered."""
    set_json(json_out)
    doc = _admin(server, admin_token).get("/v1/requests", state=state, team=team, user=user)

    def human(con: Any) -> None:
        for r in doc["requests"]:
            con.print(
                f"{r['request_id'][:12]}  {r['state']:<9} {markup(r['team'])}/"
                f"{markup(r['entry'])} by {markup(r['submitted_by'])}  "
                f"{r['verdict'] or ''}  {r['updated_at']}",
                highlight=False,
            )
        con.print(f"{len(doc['requests'])} request(s)")

    emit(doc, human)


def _act(action: str) -> Any:
    def cmd(
        request_id: Annotated[str, typer.Argument(help="The request id (a prefix will do).")],
        server: ServerOpt,
        admin_token: AdminTokenOpt = None,
        json_out: JsonOpt = False,
    ) -> None:
        set_json(json_out)
        doc = _admin(server, admin_token).post(f"/v1/admin/requests/{request_id}/{action}")
        r = doc["request"]
        emit(doc, lambda con: con.print(f"{r['request_id']} is now {r['state']}"))

    return cmd


def eta_cmd(server: ServerOpt, admin_token: AdminTokenOpt = None, json_out: JsonOpt = False):
    """When the queue will be drained, from measured verification times and live workers."""
    set_json(json_out)
    doc = _admin(server, admin_token).get("/v1/admin/eta")

    def human(con: Any) -> None:
        left = f"{doc['pending']} pending, {doc['running']} running"
        if doc["eta_s"] is None:
            con.print(f"{left}; no ETA: {doc['why_none']}")
        else:
            con.print(
                f"{left}; {doc['live_workers']} live worker(s), median verification "
                f"{doc['median_verification_s']} s: drained in about {doc['eta_s'] / 60:.0f} min"
            )

    emit(doc, human)


def revoke_cmd(
    name: Annotated[str, typer.Argument(help="The worker token's name (`workers` lists them).")],
    server: ServerOpt,
    admin_token: AdminTokenOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Revoke a worker token: its leases end now and other workers take the requests."""
    set_json(json_out)
    doc = _admin(server, admin_token).post(f"/v1/admin/workers/{name}/revoke")
    emit(doc, lambda con: con.print(f"revoked {name}; released {len(doc['released'])} request(s)"))


def workers_cmd(server: ServerOpt, admin_token: AdminTokenOpt = None, json_out: JsonOpt = False):
    """The worker tokens, and how many workers were heard from recently."""
    set_json(json_out)
    doc = _admin(server, admin_token).get("/v1/admin/workers")

    def human(con: Any) -> None:
        for t in doc["tokens"]:
            con.print(f"{t['name']}  {'revoked' if t['revoked'] else 'live'}")
        con.print(f"{doc['live']} worker(s) heard from recently")

    emit(doc, human)


for _name, _command, _help in (
    ("counts", counts_cmd, None),
    ("list", list_cmd, None),
    ("retry", _act("retry"), "Put a FAILED or CANCELLED request back in the queue."),
    ("cancel", _act("cancel"), "Cancel a PENDING or RUNNING request."),
    ("reverify", _act("reverify"), "Verify a FINISHED request again."),
    ("eta", eta_cmd, None),
    ("workers", workers_cmd, None),
    ("revoke-worker", revoke_cmd, None),
):
    admin_app.command(_name, help=_help)(_command)


def register(root: typer.Typer) -> None:
    root.command("server", help=SERVER_HELP)(server_cmd)
    root.add_typer(admin_app, name="competition")
