"""``podium leaderboard``: publish signed results, show them, check them, serve them.

The store is a folder (default ``./leaderboard-data`` or ``$PODIUM_STORE``) or a Hub
dataset (``hf://datasets/ORG/NAME``); both have the same layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from podium.cli.options import JsonOpt, KeyOpt, StoreOpt, require_signing_key
from podium.cli.output import console, emit, emit_line, set_json
from podium.errors import EXIT_FINDINGS, UsageError
from podium.signing import load_public_key
from podium.untrusted import markup, text

ChallengeOpt = Annotated[
    str | None,
    typer.Option("--challenge", "-c", help="Only this challenge id (default: every challenge)."),
]

app = typer.Typer(help="The leaderboard: records, stores, views.", no_args_is_help=True)


def open_existing(url: str | None) -> Any:
    """A store to read from: a folder that does not exist, or is not a store, is an error."""
    from leaderboard.stores import LocalStore, open_store, resolve_store_url

    store = open_store(url)
    if isinstance(store, LocalStore):
        root = store.root
        hint = (
            "pass --store with a store folder or hf://datasets/ORG/NAME; "
            "`podium verify BUNDLE --key KEY --publish DIR` creates one"
        )
        if not root.exists():
            raise UsageError(
                f"no leaderboard store at {resolve_store_url(url)}: no such folder", hint=hint
            )
        if not root.is_dir() or not any((root / p).exists() for p in ("README.md", "records")):
            raise UsageError(
                f"{resolve_store_url(url)} is not a leaderboard store (no README.md, no records/)",
                hint=hint,
            )
    return store


@app.command("show")
def show_cmd(
    store: StoreOpt = None,
    challenge: ChallengeOpt = None,
    all_attempts: Annotated[
        bool, typer.Option("--all", help="Every VERIFIED attempt, not only each team's best.")
    ] = False,
    json_out: JsonOpt = False,
) -> None:
    """Ranked VERIFIED entries by TPS, then the others with their reason.

    Example: podium leaderboard show --store ./leaderboard-data --challenge fast-gemma
    """
    from leaderboard.ranking import build_boards
    from leaderboard.views.table import render

    set_json(json_out)
    st = open_existing(store)
    boards = build_boards(st.list_records(), challenge=challenge, best_per_team=not all_attempts)
    emit(
        {"store": st.url, "boards": [b.to_dict() for b in boards]}, lambda con: render(boards, con)
    )


@app.command("export")
def export_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write.")],
    fmt: Annotated[str, typer.Option("--format", help="csv, parquet or json.")] = "csv",
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Write every record as CSV, Parquet (needs pyarrow) or JSON.

    Example: podium leaderboard export --store ./leaderboard-data --format parquet -o lb.parquet
    """
    from leaderboard.views.export import export

    set_json(json_out)
    st = open_existing(store)
    count = export(st.list_records(), fmt, out)
    result = {"store": st.url, "format": fmt, "output": str(out), "rows": count}
    emit(result, lambda con: con.print(f"wrote {count} rows to {markup(out)} ({markup(fmt)})"))


@app.command("verify")
def verify_cmd(
    pubkey: Annotated[
        list[Path], typer.Option("--pubkey", help="Organizer public key (PEM); repeat for several.")
    ],
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check every row's schema, id and signature; list forged or altered rows (exit 1).

    Get the public key from the organizers, not from the store itself.

    Example: podium leaderboard verify --store hf://datasets/org/lb --pubkey organizer.pem.pub
    """
    from leaderboard.verify import verify_store

    set_json(json_out)
    st = open_existing(store)
    check = verify_store(st, [load_public_key(p) for p in pubkey])

    def human(con: Console) -> None:
        for bad in check.bad:
            con.print(f"[red]BAD[/] {markup(bad.path)}: {markup(bad.problem)}")
        colour = "green" if check.ok else "red"
        con.print(f"[{colour}]{check.good} of {check.checked} rows verified[/] in {markup(st.url)}")

    emit({"store": st.url, **check.to_dict()}, human)
    if not check.ok:
        raise typer.Exit(EXIT_FINDINGS)


@app.command("publish")
def publish_cmd(
    reports: Annotated[list[Path], typer.Argument(help="Signed report JSON files.")],
    key: KeyOpt = None,
    pubkey: Annotated[
        Path | None,
        typer.Option("--pubkey", help="Key the reports were signed with, if not --key."),
    ] = None,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Build signed records from signed reports and publish them (idempotent).

    Example: podium leaderboard publish out/*/report.json --store ./lb --key organizer.pem
    """
    from leaderboard.publish import publish_reports
    from leaderboard.stores import open_store
    from schemas.validate import read_json

    set_json(json_out)
    keypair = require_signing_key(key)
    public = load_public_key(pubkey) if pubkey else None
    docs: list[dict[str, Any]] = []
    for path in reports:
        doc = read_json(path)
        if not isinstance(doc, dict):
            raise UsageError(f"{path} is not a report (not a JSON object)")
        docs.append(doc)
    done = publish_reports(docs, open_store(store), keypair, public_key=public)

    def human(con: Console) -> None:
        con.print(
            f"{len(done.result.added)} added, {len(done.result.already_present)} already "
            f"present in {markup(done.store)} (key {markup(done.key_id)})"
        )
        for r in done.records:
            con.print(
                text(
                    f"  {r['record_id']} {r['verdict']:<10} {r['team']}/{r['entry']} {r['reason']}"
                )
            )
        con.print(f"next: podium leaderboard show --store {markup(done.store)}")

    emit(done.to_dict(), human)


@app.command("serve")
def serve_cmd(
    store: StoreOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port (0: any free port).")] = 7860,
    json_out: JsonOpt = False,
) -> None:
    """Serve the leaderboard page and /records.json until interrupted.

    With --json it prints one line, {"url": ...}, once it listens.

    Example: podium leaderboard serve --store ./leaderboard-data --port 7860
    """
    from leaderboard.views.web import make_server

    set_json(json_out)
    server = make_server(open_existing(store), host, port)
    bound_host, bound_port = server.server_address[:2]
    url = f"http://{bound_host!s}:{bound_port}/"
    if json_out:
        emit_line({"url": url})
    else:
        console(stderr=True).print(f"serving {markup(url)} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@app.command("build-site")
def build_site_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the site into.")],
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Write the static page and a records.json snapshot for a static Space.

    Example: podium leaderboard build-site --store ./leaderboard-data -o site/
    """
    from leaderboard.views.web import build_site

    set_json(json_out)
    st = open_existing(store)
    files = build_site(st.list_records(), out, store=st.url)
    emit(
        {"store": st.url, "files": [str(f) for f in files]},
        lambda con: con.print(f"wrote {len(files)} files to {markup(out)}"),
    )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="leaderboard")
