"""``podium keys``: Ed25519 signing keys for reports and records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from podium.cli.options import JsonOpt
from podium.cli.output import emit, set_json
from podium.signing import KeyPair, key_id, load_public_key, public_raw_b64, write_keypair
from podium.untrusted import text

app = typer.Typer(help="Signing keys (Ed25519).", no_args_is_help=True)


@app.command("generate")
def generate_cmd(
    path: Annotated[
        Path,
        typer.Argument(
            help="Private key file to write (PEM, mode 0600); the public key goes to PATH.pub."
        ),
    ],
    force: Annotated[bool, typer.Option("--force", help="Overwrite existing files.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Generate a signing key pair.

    Example: podium keys generate keys/organizer.pem
    """
    set_json(json_out)
    pair = KeyPair.generate()
    public_path = write_keypair(pair, path, overwrite=force)
    data = {"private_key": str(path), "public_key": str(public_path), "key_id": pair.key_id}
    emit(
        data,
        lambda con: con.print(
            text(
                f"wrote {path} (private, keep it secret) and {public_path} (publish it); "
                f"key id {pair.key_id}"
            )
        ),
    )


@app.command("id")
def id_cmd(
    path: Annotated[Path, typer.Argument(help="A public (or private) key file.")],
    json_out: JsonOpt = False,
) -> None:
    """Print a key's id (with --json, also the key as a challenge spec pins it).

    Example: podium keys id keys/organizer.pem.pub
    """
    set_json(json_out)
    public = load_public_key(path)
    kid = key_id(public)
    emit(
        {"key_id": kid, "file": str(path), "public_key": public_raw_b64(public)},
        lambda con: con.print(kid),
    )


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="keys")
