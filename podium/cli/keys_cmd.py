"""``podium keys``: Ed25519 signing keys for reports and records."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from podium.cli.options import JsonOpt
from podium.cli.output import console, emit, set_json
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
    tracked = unignored_in_git(path)
    warning = (
        f"{path} is inside the git working tree {tracked}, which does not ignore it: a "
        f"`git add` would publish the private key; add its folder to {tracked}/.gitignore "
        "(or keep keys outside the tree)"
        if tracked
        else None
    )
    data = {
        "private_key": str(path),
        "public_key": str(public_path),
        "key_id": pair.key_id,
        "warnings": [warning] if warning else [],
    }

    def human(con: Console) -> None:
        con.print(
            text(
                f"wrote {path} (private, keep it secret) and {public_path} (publish it); "
                f"key id {pair.key_id}"
            )
        )
        if warning:
            console(stderr=True).print(Text.assemble(("warning: ", "bold yellow"), text(warning)))

    emit(data, human)


def unignored_in_git(path: Path) -> str | None:
    """The top of the git working tree that holds ``path`` when git would not ignore it
    (``git check-ignore``), else None (outside any tree, ignored, or no git at all)."""
    import shutil
    import subprocess

    git = shutil.which("git")
    if git is None:
        return None
    where = path.resolve().parent
    try:
        top = subprocess.run(
            [git, "-C", str(where), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if top.returncode != 0:
            return None
        ignored = subprocess.run(
            [git, "-C", str(where), "check-ignore", "-q", str(path.resolve())],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return top.stdout.strip() if ignored.returncode == 1 else None


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
