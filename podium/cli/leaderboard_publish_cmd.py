"""``podium leaderboard publish``, ``publish-bundle``, ``sign-head``, ``withdraw`` and
``rotate-key``: the organizer's writes to a store, each signed with ``--key``. Mounted by
``leaderboard_cmd``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from podium.cli.options import JsonOpt, KeyOpt, StoreOpt, require_signing_key
from podium.cli.output import emit, set_json
from podium.errors import UsageError
from podium.signing import load_public_key
from podium.untrusted import markup, text


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


def sign_head_cmd(key: KeyOpt = None, store: StoreOpt = None, json_out: JsonOpt = False) -> None:
    """Sign the store's whole set again under a new version and time.

    Run it at least as often as the spec's freshness bound (leaderboard.head_max_age_days)
    when nothing new is published, so viewers can tell a quiet store from a frozen one; it
    also gives a store made before heads existed its first head (the rows a trusted key
    signed).

    Example: podium leaderboard sign-head --store ./leaderboard-data --key organizer.pem
    """
    from leaderboard.publish import resign_head
    from leaderboard.stores import open_existing_store

    set_json(json_out)
    keypair = require_signing_key(key)
    st = open_existing_store(store)
    head = resign_head(st, keypair)
    emit(
        {"store": st.url, "head": head},
        lambda con: con.print(
            f"signed head v{head['version']} of {head['size']} documents at {head['made_at']} "
            f"(key {markup(head['key_id'])})"
        ),
    )


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
    from leaderboard.stores import open_existing_store

    set_json(json_out)
    keypair = require_signing_key(key)
    done = withdraw(open_existing_store(store), keypair, record_id, reason)
    emit(
        done,
        lambda con: con.print(
            text(
                f"withdrew {done['team']}/{done['entry']} ({record_id}) at {done['withdrawn_at']}"
                + ("" if done["added"] else " (already withdrawn)")
            )
        ),
    )


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
    from leaderboard.stores import open_existing_store
    from podium.signing import load_private_key

    set_json(json_out)
    old = require_signing_key(key)
    new = load_private_key(new_key)
    if new.key_id == old.key_id:
        raise UsageError(
            "--new-key is the same key as --key", hint="make one: podium keys generate"
        )
    done = rotate_key(open_existing_store(store), old, new, revoked=revoke, reason=reason)
    emit(
        done,
        lambda con: con.print(
            f"key {markup(old.key_id)} -> {markup(new.key_id)} at {done['at']}"
            + (" (old key REVOKED)" if revoke else "")
        ),
    )


def publish_bundle_cmd(
    bundles: Annotated[list[Path], typer.Argument(help="Bundle files (.tar.gz).")],
    key: KeyOpt = None,
    store: StoreOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Put submitted bundles into the store, each a leaf of the signed head (idempotent).

    Each is stored as bundles/<sha256>.tar.gz; the page links a row to the bundle its
    bundle_sha256 names, and serve and export --bundles hand it out only when its bytes
    are those the signed head lists.

    Example: podium leaderboard publish-bundle dist/entry.tar.gz --store ./lb --key organizer.pem
    """
    from leaderboard.publish import publish_bundle
    from leaderboard.stores import open_store

    set_json(json_out)
    keypair = require_signing_key(key)
    st = open_store(store)
    done = []
    for path in bundles:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise UsageError(
                f"cannot read bundle {path}: {exc.strerror}", hint="pass a bundle file"
            ) from exc
        done.append({"file": str(path), **publish_bundle(st, keypair, data)})

    def human(con: Console) -> None:
        for d in done:
            state = "added" if d["added"] else "already present"
            con.print(text(f"{d['path']} ({d['bytes']} bytes): {state}"))

    emit({"store": st.url, "bundles": done}, human)
