"""``podium leaderboard``: publish signed results, show them, check them, serve them.

The store is a folder (default ``./leaderboard-data`` or ``$PODIUM_STORE``) or a Hub
dataset (``hf://datasets/ORG/NAME``); both have the same layout.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from podium.cli.options import (
    JsonOpt,
    KeyOpt,
    StoreOpt,
    complete_challenges,
    require_signing_key,
)
from podium.cli.output import console, emit, emit_line, set_json
from podium.errors import EXIT_FINDINGS, UsageError
from podium.signing import load_public_key
from podium.untrusted import markup, text

ChallengeOpt = Annotated[
    str | None,
    typer.Option(
        "--challenge",
        "-c",
        help="Only this challenge id (default: every challenge).",
        autocompletion=complete_challenges,
    ),
]

PubkeyOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--pubkey",
        metavar="FILE",
        help="An organizer public key (PEM) to trust for rows of any challenge, besides the "
        "keys the challenge spec pins; repeat for several. Never take it from the store.",
    ),
]
NoSpecKeysOpt = Annotated[
    bool,
    typer.Option(
        "--no-spec-keys", help="Trust only the --pubkey keys, not those the challenge spec pins."
    ),
]
NoVerifyOpt = Annotated[
    bool,
    typer.Option(
        "--no-verify",
        help="Check no signature (faster); the output then says plainly that nothing was checked.",
    ),
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


def trust_of(pubkey: list[Path] | None, no_spec_keys: bool, no_verify: bool) -> Any:
    """The keys a view checks rows against (None with --no-verify)."""
    from leaderboard.trust import build_trust

    if no_verify:
        if pubkey or no_spec_keys:
            raise UsageError(
                "--no-verify checks nothing, so --pubkey and --no-spec-keys mean nothing with it",
                hint="leave out --no-verify to check every row, or the key options to skip it",
            )
        return None
    return build_trust(pubkey or [], spec_keys_too=not no_spec_keys)


def read_view(
    store: str | None,
    challenge: str | None,
    pubkey: list[Path] | None,
    no_spec_keys: bool,
    no_verify: bool,
) -> tuple[Any, Any]:
    """(the store, its rows checked): what every reading command starts from."""
    from leaderboard.views.board import read_checked

    trust = trust_of(pubkey, no_spec_keys, no_verify)
    st = open_existing(store)
    return st, read_checked(st, trust, challenge)


@app.command("show")
def show_cmd(
    store: StoreOpt = None,
    challenge: ChallengeOpt = None,
    all_attempts: Annotated[
        bool, typer.Option("--all", help="Every VERIFIED entry, not only each team's best.")
    ] = False,
    pubkey: PubkeyOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    no_verify: NoVerifyOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Ranked VERIFIED entries by TPS, then the others with their reason.

    Every row is checked against the organizer keys the challenge spec pins (and any
    --pubkey) first; a row that fails is never ranked and is listed apart with why. The
    whole set is checked against the store's signed head: a row missing, one no head
    lists, a rollback or a stale head is named in a line above the tables. Entries that
    cannot be told apart within the noise share a rank, marked '='.

    Example: podium leaderboard show --store ./leaderboard-data --challenge fast-gemma
    """
    from leaderboard.views.board import boards_of, show_document
    from leaderboard.views.table import render

    set_json(json_out)
    st, check = read_view(store, challenge, pubkey, no_spec_keys, no_verify)
    boards = boards_of(check, challenge=challenge, best_per_team=not all_attempts)
    emit(show_document(check, boards, st.url), lambda con: render(boards, con, check))


EXPORT_FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}


def export_format(out: Path, fmt: str | None) -> str:
    """The format ``out``'s extension names; a --format that disagrees is refused."""
    from leaderboard.views.export import FORMATS

    if fmt is not None and fmt not in FORMATS:
        raise UsageError(
            f"unknown export format {fmt!r} (--format)", hint=f"choose one of: {', '.join(FORMATS)}"
        )
    by_suffix = EXPORT_FORMATS.get(out.suffix.lower())
    if by_suffix is None:
        if fmt is not None:
            return fmt
        raise UsageError(
            f"cannot tell the format of {out} from its extension {out.suffix or '(none)'!r}",
            hint="name it .csv, .parquet or .json, or pass --format",
        )
    if fmt is not None and fmt != by_suffix:
        raise UsageError(
            f"--format {fmt} disagrees with {out}'s extension ({out.suffix}: {by_suffix})",
            hint=f"name the file .{fmt} or leave out --format",
        )
    return by_suffix


@app.command("export")
def export_cmd(
    out: Annotated[
        Path, typer.Option("--out", "-o", help="File to write; its extension names the format.")
    ],
    fmt: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="csv, parquet or json (default: from --out's extension; must agree with it).",
        ),
    ] = None,
    store: StoreOpt = None,
    pubkey: PubkeyOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    no_verify: NoVerifyOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Write every verified row as CSV, Parquet (needs pyarrow) or JSON.

    Rows that fail the signature check are not written; they are listed instead, as is
    anything wrong with the whole set (rows missing, unlisted, a rollback, a stale head).

    Example: podium leaderboard export --store ./leaderboard-data -o lb.parquet
    """
    from leaderboard.verify import count_rows
    from leaderboard.views.export import export

    set_json(json_out)
    kind = export_format(out, fmt)
    st, check = read_view(store, None, pubkey, no_spec_keys, no_verify)
    count = export(check.records, kind, out)
    result = {
        "store": st.url,
        "format": kind,
        "output": str(out),
        "rows": count,
        "checked": check.checked,
        "summary": check.summary(),
        "unverified": [b.to_dict() for b in check.bad],
        "head": check.head,
        "set_ok": not check.set_problems,
        "set_problems": [p.to_dict() for p in check.set_problems],
        "withdrawn": [w.to_dict() for w in check.withdrawn],
    }

    def human(con: Console) -> None:
        con.print(text(check.summary()))
        for problem in check.set_problems:
            con.print(text(problem.line(), style="bold red"))
        for bad in check.bad:
            con.print(text(f"not written: {bad.path}: {bad.kind}: {bad.problem}"))
        for gone in check.withdrawn:
            con.print(text(f"not written: {gone.line()}"))
        con.print(f"wrote {count_rows(count)} to {markup(out)} ({markup(kind)})")

    emit(result, human)


@app.command("verify")
def verify_cmd(
    pubkey: PubkeyOpt = None,
    store: StoreOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Check every row and the whole set; list what fails (exit 1).

    Each row's schema, id, path and signature, and the store's signed head: no listed
    row missing, no row unlisted, no rollback from a head this viewer checked before, not
    older than the spec's freshness bound. The keys are those the challenge spec pins and
    any --pubkey; a key published only inside the store is never trusted. Get a --pubkey
    from the organizers.

    Example: podium leaderboard verify --store hf://datasets/org/lb --pubkey organizer.pem.pub
    """
    set_json(json_out)
    st, check = read_view(store, None, pubkey, no_spec_keys, False)

    def human(con: Console) -> None:
        for problem in check.set_problems:
            con.print(text(problem.line(), style="bold red"))
        for bad in check.bad:
            con.print(f"[red]BAD[/] {markup(bad.path)}: {markup(bad.kind)}: {markup(bad.problem)}")
        for gone in check.withdrawn:
            con.print(text(gone.line(), style="yellow"))
        colour = "green" if check.ok else "red"
        con.print(f"[{colour}]{markup(check.summary())}[/] in {markup(st.url)}")

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
        pub = markup(f"{key}.pub") if key else "KEYFILE.pub"
        con.print(f"next: podium leaderboard show --store {markup(done.store)} --pubkey {pub}")

    emit(done.to_dict(), human)


@app.command("sign-head")
def sign_head_cmd(key: KeyOpt = None, store: StoreOpt = None, json_out: JsonOpt = False) -> None:
    """Sign the store's whole set again under a new version and time.

    Run it at least as often as the spec's freshness bound (leaderboard.head_max_age_days)
    when nothing new is published, so viewers can tell a quiet store from a frozen one; it
    also gives a store made before heads existed its first head (the rows a trusted key
    signed).

    Example: podium leaderboard sign-head --store ./leaderboard-data --key organizer.pem
    """
    from leaderboard.publish import resign_head

    set_json(json_out)
    keypair = require_signing_key(key)
    st = open_existing(store)
    head = resign_head(st, keypair)
    emit(
        {"store": st.url, "head": head},
        lambda con: con.print(
            f"signed head v{head['version']} of {head['size']} documents at {head['made_at']} "
            f"(key {markup(head['key_id'])})"
        ),
    )


@app.command("withdraw")
def withdraw_cmd(
    record_id: Annotated[str, typer.Argument(help="The record_id of the published row.")],
    reason: Annotated[
        str, typer.Option("--reason", help="Why it no longer counts (shown on the board).")
    ],
    key: KeyOpt = None,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Withdraw a published row (disqualified after publication) with a signed withdrawal.

    The row is never deleted: the board shows it apart as WITHDRAWN, with the reason and
    the date, and the store's signed head lists the withdrawal.

    Example: podium leaderboard withdraw 3f2a9c... --reason "cached answers" --key org.pem
    """
    from leaderboard.publish import withdraw

    set_json(json_out)
    keypair = require_signing_key(key)
    done = withdraw(open_existing(store), keypair, record_id, reason)
    emit(
        done,
        lambda con: con.print(
            text(
                f"withdrew {done['team']}/{done['entry']} ({record_id}) at {done['withdrawn_at']}"
                + ("" if done["added"] else " (already withdrawn)")
            )
        ),
    )


@app.command("rotate-key")
def rotate_key_cmd(
    new_key: Annotated[
        Path, typer.Option("--new-key", help="The new organizer private key (PEM).")
    ],
    key: KeyOpt = None,
    revoke: Annotated[
        bool,
        typer.Option(
            "--revoke",
            help="The old key was compromised: list every row it signed apart from now on.",
        ),
    ] = False,
    reason: Annotated[str, typer.Option("--reason", help="Why (shown to viewers).")] = "",
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Hand the store over to a new organizer key, signed by the key it replaces (--key).

    Viewers that trust the old key trust the new one from now on, for the same challenges;
    rows the old key signed before stay verified unless --revoke. Publish with --new-key
    from then on.

    Example: podium leaderboard rotate-key --key old.pem --new-key new.pem --store ./lb
    """
    from leaderboard.publish import rotate_key
    from podium.signing import load_private_key

    set_json(json_out)
    old = require_signing_key(key)
    new = load_private_key(new_key)
    if new.key_id == old.key_id:
        raise UsageError(
            "--new-key is the same key as --key", hint="make one: podium keys generate"
        )
    done = rotate_key(open_existing(store), old, new, revoked=revoke, reason=reason)
    emit(
        done,
        lambda con: con.print(
            f"key {markup(old.key_id)} -> {markup(new.key_id)} at {done['at']}"
            + (" (old key REVOKED)" if revoke else "")
        ),
    )


def port_number(value: str) -> int:
    """``--port``'s parser: a whole number from 0 to 65535, else a usage error naming it."""
    try:
        port = int(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a port number (0 to 65535)") from None
    if not 0 <= port <= 65535:
        raise typer.BadParameter(f"{port} is not a port number: choose one from 0 to 65535")
    return port


@app.command("serve")
def serve_cmd(
    store: StoreOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", metavar="PORT", parser=port_number, help="Port, 0 to 65535 (0: any free one)."
        ),
    ] = 7860,
    pubkey: PubkeyOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    no_verify: NoVerifyOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Serve the leaderboard page and /records.json until interrupted.

    Each row and the whole set are checked as for `show`; the page ranks only the rows
    that pass, shows the key that signed each, lists the others apart with why, and warns
    above the board when the set does not check. With --json it prints one
    line, {"url": ...}, once it listens.

    Example: podium leaderboard serve --store ./leaderboard-data --port 7860
    """
    from leaderboard.views.web import make_server

    set_json(json_out)
    trust = trust_of(pubkey, no_spec_keys, no_verify)
    server = make_server(open_existing(store), host, port, trust=trust)
    bound_host, bound_port = server.server_address[:2]
    url = f"http://{bound_host!s}:{bound_port}/"
    if json_out:
        emit_line({"url": url, "checked": trust is not None})
    else:
        err = console(stderr=True)
        if trust is None:
            err.print("[bold red]NOTHING WAS CHECKED (--no-verify)[/]: the page says so too")
        err.print(f"serving {markup(url)} (Ctrl-C to stop)")
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
    pubkey: PubkeyOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    no_verify: NoVerifyOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Write the static page and a checked records.json snapshot for a static Space.

    The rows and the whole set are checked as for `show`; the signed files the page links
    to (each row, the head) are written beside it.

    Example: podium leaderboard build-site --store ./leaderboard-data -o site/
    """
    from leaderboard.views.web import build_site

    set_json(json_out)
    st, check = read_view(store, None, pubkey, no_spec_keys, no_verify)
    files = build_site(check, out, store=st.url)
    emit(
        {"store": st.url, "files": [str(f) for f in files], **check.to_dict()},
        lambda con: _site_human(con, check, files, out),
    )


def _site_human(con: Console, check: Any, files: list[Path], out: Path) -> None:
    con.print(text(check.summary()))
    for problem in check.set_problems:
        con.print(text(problem.line(), style="bold red"))
    con.print(f"wrote {len(files)} files to {markup(out)}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="leaderboard")
