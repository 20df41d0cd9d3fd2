"""``podium leaderboard``: publish signed results, show them, check them, serve them.

The store is a folder (default ``./leaderboard-data`` or ``$PODIUM_STORE``) or a Hub
dataset (``hf://datasets/ORG/NAME``); both have the same layout.

Here: the group and the commands that read a store (show, export, verify, serve,
build-site), each checking every row and the whole set first. The organizer's commands
that write one (publish, publish-bundle, sign-head, withdraw, rotate-key) are in
``leaderboard_publish_cmd``; the group mounts them all in the order its help lists them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from podium.cli.leaderboard_publish_cmd import (
    publish_bundle_cmd,
    publish_cmd,
    rotate_key_cmd,
    sign_head_cmd,
    withdraw_cmd,
)
from podium.cli.options import JsonOpt, StoreOpt, complete_challenges, load_named_challenge
from podium.cli.output import console, emit, emit_line, set_json
from podium.errors import EXIT_FINDINGS, UsageError
from podium.untrusted import markup, text

ChallengeOpt = Annotated[
    str | None,
    typer.Option(
        "--challenge",
        "-c",
        help="Only this challenge: an id, or a spec (a name, a file, a URL, hf://...) whose "
        "keys, noise and freshness bound then judge its rows (default: every challenge).",
        autocompletion=complete_challenges,
    ),
]
SpecOpt = Annotated[
    str | None,
    typer.Option(
        "--challenge",
        "-c",
        help="A challenge spec (a name, a file, a URL, hf://...) whose keys, noise and "
        "freshness bound judge its rows, instead of podium's shipped spec of that id.",
        autocompletion=complete_challenges,
    ),
]


@contextmanager
def judged_by(challenge: str | None) -> Iterator[str | None]:
    """The challenge id ``--challenge`` names, its spec in force while the view runs; an id
    podium ships no spec of (a store's own challenge) only filters."""
    from leaderboard.specs import viewing
    from podium.remote import is_remote
    from schemas.challenge import list_challenges

    path = Path(challenge or "")
    if challenge is None:
        yield None
    elif (
        is_remote(challenge)
        or path.suffix == ".json"
        or path.is_file()
        or (challenge in list_challenges())
    ):
        spec = load_named_challenge(challenge, "--challenge")
        with viewing(spec):
            yield spec.id
    else:
        yield challenge


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
    from leaderboard.stores import open_existing_store
    from leaderboard.views.board import read_checked

    trust = trust_of(pubkey, no_spec_keys, no_verify)
    st = open_existing_store(store)
    return st, read_checked(st, trust, challenge)


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
    lists, a rollback or a stale head is named in a line above the tables, and the exit
    status is 1, as for verify. Entries that cannot be told apart within the noise share
    a rank, marked '='.

    Example: podium leaderboard show --store ./leaderboard-data --challenge fast-gemma
    """
    from leaderboard.views.board import boards_of, show_document
    from leaderboard.views.table import render

    set_json(json_out)
    with judged_by(challenge) as cid:
        st, check = read_view(store, cid, pubkey, no_spec_keys, no_verify)
        boards = boards_of(check, challenge=cid, best_per_team=not all_attempts)
    emit(show_document(check, boards, st.url), lambda con: render(boards, con, check))
    exit_if_set_fails(check)


def exit_if_set_fails(check: Any) -> None:
    """Exit 1, as ``verify`` does, when the whole set does not check: a view never says
    yes to a board it could not prove."""
    if check.set_problems:
        raise typer.Exit(EXIT_FINDINGS)


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
    challenge: SpecOpt = None,
    bundles: Annotated[
        Path | None,
        typer.Option(
            "--bundles",
            metavar="DIR",
            help="Also write each exported row's bundle the store holds into DIR, after "
            "checking its bytes against the signed head.",
        ),
    ] = None,
    pubkey: PubkeyOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    no_verify: NoVerifyOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Write every verified row as CSV, Parquet (needs pyarrow) or JSON.

    Rows that fail the signature check are not written; they are listed instead, as is
    anything wrong with the whole set (rows missing, unlisted, a rollback, a stale head).
    When the whole set does not check, or a bundle's bytes are not those the signed head
    lists, nothing is written and the exit status is 1.

    Example: podium leaderboard export --store ./leaderboard-data -o lb.parquet
    """
    from leaderboard.views.export import export, export_bundles, format_of

    set_json(json_out)
    kind = format_of(out, fmt)
    with judged_by(challenge):
        st, check = read_view(store, None, pubkey, no_spec_keys, no_verify)
    proven = not check.set_problems
    held, refused = export_bundles(st, check) if bundles is not None and proven else ({}, [])
    proven = proven and not refused
    count = export(check.records, kind, out, bundles=held, bundles_dir=bundles) if proven else 0
    result = {
        "store": st.url,
        "format": kind,
        "output": str(out) if proven else None,
        "rows": count,
        "bundles": sorted(held) if proven else [],
        "refused_bundles": refused,
        "checked": check.checked,
        "summary": check.summary(),
        "unverified": [b.to_dict() for b in check.bad],
        "head": check.head,
        "set_ok": not check.set_problems,
        "set_problems": [p.to_dict() for p in check.set_problems],
        "withdrawn": [w.to_dict() for w in check.withdrawn],
    }
    emit(result, lambda con: _export_human(con, check, result, out, bundles))
    if not proven:
        raise typer.Exit(EXIT_FINDINGS)


def _export_human(
    con: Console, check: Any, result: dict[str, Any], out: Path, bundles: Path | None
) -> None:
    from leaderboard.verify import count_rows

    con.print(text(check.summary()))
    for problem in check.set_problems:
        con.print(text(problem.line(), style="bold red"))
    for bad in check.bad:
        con.print(text(f"not written: {bad.path}: {bad.kind}: {bad.problem}"))
    for gone in check.withdrawn:
        con.print(text(f"not written: {gone.line()}"))
    for why in result["refused_bundles"]:
        con.print(text(f"REFUSED: {why}", style="bold red"))
    if result["output"] is None:
        con.print(f"[bold red]nothing written[/] to {markup(out)}: the store could not be proven")
        return
    con.print(f"wrote {count_rows(result['rows'])} to {markup(out)} ({markup(result['format'])})")
    if bundles is not None:
        con.print(f"wrote {len(result['bundles'])} checked bundle(s) to {markup(bundles)}")


def verify_cmd(
    pubkey: PubkeyOpt = None,
    store: StoreOpt = None,
    challenge: SpecOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Check every row and the whole set; list what fails (exit 1).

    Each row's schema, id, path and signature, and the store's signed head: no listed
    row or bundle missing, none unlisted, no rollback from a head this viewer checked
    before, not older than the spec's freshness bound, every listed bundle's bytes as
    listed (each is read). The keys are those the challenge spec pins and
    any --pubkey; a key published only inside the store is never trusted. Get a --pubkey
    from the organizers.

    Example: podium leaderboard verify --store hf://datasets/org/lb --pubkey organizer.pem.pub
    """
    from leaderboard.bundles import bundle_problems

    set_json(json_out)
    with judged_by(challenge):
        st, check = read_view(store, None, pubkey, no_spec_keys, False)
    check.set_problems += bundle_problems(st, check)

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


def port_number(value: str) -> int:
    """``--port``'s parser: a whole number from 0 to 65535, else a usage error naming it."""
    try:
        port = int(value)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a port number (0 to 65535)") from None
    if not 0 <= port <= 65535:
        raise typer.BadParameter(f"{port} is not a port number: choose one from 0 to 65535")
    return port


def serve_cmd(
    store: StoreOpt = None,
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int,
        typer.Option(
            "--port", metavar="PORT", parser=port_number, help="Port, 0 to 65535 (0: any free one)."
        ),
    ] = 7860,
    challenge: SpecOpt = None,
    pubkey: PubkeyOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    no_verify: NoVerifyOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Serve the leaderboard page and /records.json until interrupted.

    Each row and the whole set are checked as for `show`; the page ranks only the rows
    that pass, shows the key that signed each, lists the others apart with why, and warns
    above the board when the set does not check; so does the first line printed. A bundle
    is handed out only when its bytes are those the signed head lists. With --json it
    prints one line, {"url": ..., "set_ok": ...}, once it listens.

    Example: podium leaderboard serve --store ./leaderboard-data --port 7860
    """
    set_json(json_out)
    with judged_by(challenge):
        _serve(store, host, port, trust_of(pubkey, no_spec_keys, no_verify), json_out)


def _serve(store: str | None, host: str, port: int, trust: Any, json_out: bool) -> None:
    from leaderboard.stores import open_existing_store
    from leaderboard.views.web import make_server

    server = make_server(open_existing_store(store), host, port, trust=trust)
    check = server.records.check()  # checked before the first line, which says how it went
    bound_host, bound_port = server.server_address[:2]
    url = f"http://{bound_host!s}:{bound_port}/"
    if json_out:
        emit_line(
            {
                "url": url,
                "checked": trust is not None,
                "set_ok": not check.set_problems,
                "summary": check.summary(),
                "set_problems": [p.to_dict() for p in check.set_problems],
            }
        )
    else:
        err = console(stderr=True)
        if trust is None:
            err.print("[bold red]NOTHING WAS CHECKED (--no-verify)[/]: the page says so too")
        elif check.set_problems:
            err.print(
                f"[bold red]THE SET DOES NOT CHECK[/] ({markup(check.set_problems[0].kind)}, "
                f"{len(check.set_problems)} in all): the page says so too; "
                f"{markup(check.set_problems[0].message)}"
            )
        else:
            err.print(text(check.summary()))
        err.print(f"serving {markup(url)} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def build_site_cmd(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder to write the site into.")],
    store: StoreOpt = None,
    challenge: SpecOpt = None,
    pubkey: PubkeyOpt = None,
    no_spec_keys: NoSpecKeysOpt = False,
    no_verify: NoVerifyOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Write the static page and a checked records.json snapshot for a static Space.

    The rows and the whole set are checked as for `show`; the signed files the page links
    to (each row, the head) are written beside it. When the set does not check, the page
    says so above the board and the exit status is 1.

    Example: podium leaderboard build-site --store ./leaderboard-data -o site/
    """
    from leaderboard.views.web import build_site

    set_json(json_out)
    with judged_by(challenge):
        st, check = read_view(store, None, pubkey, no_spec_keys, no_verify)
        files = build_site(check, out, store=st.url)
    emit(
        {"store": st.url, "files": [str(f) for f in files], **check.to_dict()},
        lambda con: _site_human(con, check, files, out),
    )
    exit_if_set_fails(check)


def _site_human(con: Console, check: Any, files: list[Path], out: Path) -> None:
    con.print(text(check.summary()))
    for problem in check.set_problems:
        con.print(text(problem.line(), style="bold red"))
    con.print(f"wrote {len(files)} files to {markup(out)}")


for _name, _command in (
    ("show", show_cmd),
    ("export", export_cmd),
    ("verify", verify_cmd),
    ("publish", publish_cmd),
    ("publish-bundle", publish_bundle_cmd),
    ("sign-head", sign_head_cmd),
    ("withdraw", withdraw_cmd),
    ("rotate-key", rotate_key_cmd),
    ("serve", serve_cmd),
    ("build-site", build_site_cmd),
):
    app.command(_name)(_command)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="leaderboard")
