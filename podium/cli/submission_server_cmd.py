"""``podium submission submit`` and ``status``: enter a competition through its server.

The token is ``HF_TOKEN`` or the one huggingface_hub's login saved; the server asks the
Hub who holds it. Exit codes: 0 accepted / shown, 1 refused (a damaged bundle, another
team's name), 2 usage (not logged in, another challenge's bundle), 3 could not evaluate
(over the quota: try again at the time named; the server or its database is down).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from podium.cli.options import JsonOpt
from podium.cli.output import emit, set_json
from podium.untrusted import markup

ServerOpt = Annotated[str, typer.Option("--server", help="The competition server's URL.")]


def _client(server: str) -> Any:
    from competition.client import DoorClient, hf_token
    from competition.identity import LOGIN_HINT
    from podium.errors import UsageError

    if not server:
        raise UsageError("which competition? pass --server URL", hint="the organizer names it")
    token = hf_token()
    if not token:
        raise UsageError("no Hugging Face token: set HF_TOKEN or log in", hint=LOGIN_HINT)
    return DoorClient(server, token)


def submit_cmd(
    bundle: Annotated[Path, typer.Argument(help="The bundle (.tar.gz) to enter.")],
    server: ServerOpt,
    json_out: JsonOpt = False,
) -> None:
    """Enter a bundle in a competition: its server checks it, your team and your quota.

    The same bundle again is the same request and costs nothing. With --json, prints
    {"id": ..., "request": {...}, "charged": ...}.

    Example: podium submission submit dist/acme-fast.tar.gz --server https://org-podium.hf.space
    """
    set_json(json_out)
    doc = _client(server).submit(bundle)
    req = doc["request"]
    out = {"id": req["request_id"], **doc}

    def human(con: Any) -> None:
        again = "" if doc["charged"] else " (already entered: not charged again)"
        con.print(f"entered {req['request_id']} for team {markup(req['team'])}{again}")
        con.print(f"next: podium submission status {req['request_id']} --server {server}")

    emit(out, human)


def status_cmd(
    request_id: Annotated[
        str | None, typer.Argument(help="One request (a prefix will do).")
    ] = None,
    server: ServerOpt = "",
    json_out: JsonOpt = False,
) -> None:
    """Your team's requests on a competition server, or one of them with its feedback.

    Example: podium submission status --server https://org-podium.hf.space
    """
    set_json(json_out)
    doc = _client(server).status(request_id)

    def one(con: Any, r: dict[str, Any]) -> None:
        verdict = f" {r['verdict']}" if r.get("verdict") else ""
        con.print(
            f"{r['request_id'][:12]}  {r['state']}{verdict}  {markup(r['team'])}/"
            f"{markup(r['entry'])} by {markup(r['submitted_by'])} at {r['submitted_at']}",
            highlight=False,
        )
        if r.get("message"):
            con.print(f"  {markup(r['message'])}")

    def human(con: Any) -> None:
        if request_id:
            one(con, doc["request"])
            for f in (doc["request"].get("report") or {}).get("findings") or []:
                con.print(f"  {f.get('check_id')}: {markup(f.get('message', ''))}")
            return
        q = doc["quota"]
        con.print(
            f"{markup(doc['user'])} of team {markup(doc['team'])}: "
            f"{q['user']['used']}/{q['user']['limit']} (you), "
            f"{q['team']['used']}/{q['team']['limit']} (team) in the last 24 h"
        )
        for r in doc["requests"]:
            one(con, r)

    emit(doc, human)
