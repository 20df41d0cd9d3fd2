"""Options shared by every command, declared once so each means the same everywhere.

--challenge, -c   a shipped challenge name, a spec file, a URL or an hf:// reference
                  (``schemas.challenge.load_challenge``). Default: the challenge
                  the document at hand names (a bundle's manifest, podium.toml);
                  where there is none, $PODIUM_CHALLENGE, else ``tiny``. On the
                  leaderboard it filters rows, and its default is every challenge.
--out, -o         where a command writes its files
--store, -s       a leaderboard store: ./dir or hf://datasets/ORG/NAME
--queue, -q       a verification queue: ./dir or hf://datasets/ORG/NAME
--key, -k         the organizer's Ed25519 private key (default: $PODIUM_SIGNING_KEY,
                  a PEM file's path or the PEM text itself)
--runner          where the engine runs (a choice that ``--help`` lists)
--json            one JSON document on stdout, for machines

and the options several commands share with one meaning (``--details``, ``--logs``,
``--base-digest``), with the checks of arguments that name files (a submission
directory, a bundle, a held-out set) made when a command runs.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import Annotated

import typer

from podium.errors import SignatureError, UsageError
from podium.signing import KeyPair, load_private_key, private_key_from_pem
from schemas.challenge import ChallengeSpec, load_challenge

ENV_CHALLENGE = "PODIUM_CHALLENGE"
ENV_KEY = "PODIUM_SIGNING_KEY"
DEFAULT_CHALLENGE = "tiny"

JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document for machines.")]
DetailsOpt = Annotated[
    bool,
    typer.Option(
        "--details",
        help="Every metric and check (stability, trials, reference checks...), not only the "
        "verdict, TPS, PPL and the checks that did not pass.",
    ),
]
LogsOpt = Annotated[bool, typer.Option("--logs", help="Stream the image build log.")]
BaseDigestOpt = Annotated[
    str | None,
    typer.Option(
        "--base-digest",
        help="Pin the base image to this sha256:...; a digest no local image confirms is "
        "written as unchecked, which inspect, queue submit and intake refuse unless the "
        "challenge spec confirms it.",
    ),
]


# -- completion of values (`podium --install-completion`): what each option accepts ------


def complete_challenges(incomplete: str) -> list[str]:
    """The shipped challenge names that start with what was typed."""
    from schemas.challenge import list_challenges

    return [name for name in list_challenges() if name.startswith(incomplete)]


def complete_engine_kinds(incomplete: str) -> list[str]:
    """The engine kinds a submission can name."""
    from schemas.engine_config import ENGINE_KINDS

    return [kind for kind in ENGINE_KINDS if kind.startswith(incomplete)]


def complete_schema_kinds(incomplete: str) -> list[str]:
    """The document kinds ``podium schema`` knows."""
    from schemas.validate import schema_kinds

    return [kind for kind in schema_kinds() if kind.startswith(incomplete)]


ChallengeOpt = Annotated[
    str | None,
    typer.Option(
        "--challenge",
        "-c",
        help="Challenge: a name, a spec file, a URL or hf://datasets/ORG/NAME[/FILE] (default: "
        f"the one the bundle or podium.toml names; else ${ENV_CHALLENGE}, else "
        f"{DEFAULT_CHALLENGE}).",
        autocompletion=complete_challenges,
    ),
]
StoreOpt = Annotated[
    str | None,
    typer.Option(
        "--store",
        "-s",
        help="Leaderboard store: ./dir or hf://datasets/ORG/NAME "
        "(default: $PODIUM_STORE, else ./leaderboard-data).",
    ),
]
QueueOpt = Annotated[
    str | None,
    typer.Option(
        "--queue", "-q", help="Queue: ./dir or hf://datasets/ORG/NAME (default: $PODIUM_QUEUE)."
    ),
]
KeyOpt = Annotated[
    Path | None,
    typer.Option(
        "--key",
        "-k",
        help=f"Ed25519 private key (PEM) that signs (default: ${ENV_KEY}, a path or the PEM).",
    ),
]


def entry_dir(path: Path) -> Path:
    """A submission directory argument: its ``podium.toml`` stands for the folder."""
    if path.name == "podium.toml" and path.is_file():
        return path.parent
    if path.is_file():
        raise UsageError(
            f"{path} is a file, but a submission directory is expected (the folder that "
            "holds podium.toml)",
            hint="podium submission inspect BUNDLE opens a bundle"
            if path.name.endswith((".tar.gz", ".tgz"))
            else f"pass the folder: {path.parent}",
            where=str(path),
        )
    return path


def require_entry_dir(path: Path) -> Path:
    """A submission directory that must exist (checked in the command, not while the line
    is parsed, so that ``--help`` and the docs' command lines parse with any DIR)."""
    if not path.exists():
        raise UsageError(
            f"no such directory: {path}",
            hint="podium submission init DIR writes a new submission directory",
            where=str(path),
        )
    return path


def require_bundle(path: Path) -> Path:
    """A bundle argument: a file; a directory or a missing path is named as such."""
    if path.is_file():
        return path
    if path.is_dir():
        entry = (path / "podium.toml").is_file()
        raise UsageError(
            f"{path} is a directory, but a bundle (a .tar.gz file written by "
            "`podium submission package`) is expected",
            hint=f"package it first: podium submission package {path}"
            if entry
            else "pass the bundle's .tar.gz file",
            where=str(path),
        )
    raise UsageError(
        f"no such bundle: {path}",
        hint="package one with `podium submission package DIR`",
        where=str(path),
    )


def bundle_challenge(bundle: Path) -> str | None:
    """The challenge id a bundle's manifest names; None when it cannot be read (intake
    then rejects the bundle, with a report saying why)."""
    from submission.safe_bundle import manifest_challenge

    require_bundle(bundle)
    return manifest_challenge(bundle)


EntryArg = Annotated[
    Path,
    typer.Argument(
        metavar="DIR",
        help="The submission directory (or its podium.toml).",
        callback=entry_dir,
        show_default=False,
    ),
]


HeldoutOpt = Annotated[str | None, typer.Option(help="Held-out set (dir or hf://).")]


def require_engine_kind(engine: str | None) -> str | None:
    """``--engine``: an engine kind, or not given."""
    from schemas.engine_config import ENGINE_KINDS

    if engine is not None and engine not in ENGINE_KINDS:
        raise UsageError(
            f"--engine {engine!r} is not an engine kind",
            hint=f"choose one of: {', '.join(ENGINE_KINDS)}",
            where="--engine",
        )
    return engine


def require_heldout(heldout: str | None) -> str | None:
    """``--heldout``: an ``hf://`` set, or a directory that exists (checked before any
    image is built or any request claimed)."""
    if heldout and "://" not in heldout and not Path(heldout).is_dir():
        raise UsageError(
            f"--heldout {heldout}: no such directory",
            hint="a held-out directory holds prompts.jsonl and ppl.jsonl; or pass "
            "hf://datasets/ORG/NAME",
            where="--heldout",
        )
    return heldout


def out_option(what: str = "Folder for what this command writes") -> object:
    """``--out/-o`` with a command's own help text (``--help`` shows its default)."""
    return typer.Option("--out", "-o", help=f"{what}.")


class RunnerKind(enum.StrEnum):
    """Where the engine under test runs (``verifier.runners.factory`` makes each)."""

    local_docker = "local-docker"
    jail = "jail"
    process = "process"
    hf_jobs = "hf-jobs"


class LocalRunner(enum.StrEnum):
    """The runners that start the engine on this machine."""

    local_docker = "local-docker"
    jail = "jail"
    process = "process"


RunnerOpt = Annotated[
    RunnerKind,
    typer.Option(
        "--runner",
        help="local-docker: the Docker sandbox; jail: a sandbox made with bubblewrap, no "
        "Docker daemon (both can give VERIFIED); process: a plain process, no sandbox; "
        "hf-jobs: an engine a server job serves.",
        case_sensitive=False,
    ),
]
LocalRunnerOpt = Annotated[
    LocalRunner,
    typer.Option(
        "--runner",
        help="local-docker: the verifier's Docker sandbox; jail: its bubblewrap sandbox, no "
        "Docker daemon; process: a plain process, no sandbox.",
        case_sensitive=False,
    ),
]


def challenge_name(given: str | None, named_by: str | None = None) -> str:
    """The one rule for ``--challenge``: given, else the document's, else env, else tiny."""
    return challenge_source(given, named_by)[0]


def challenge_source(given: str | None, named_by: str | None = None) -> tuple[str, str]:
    """``challenge_name`` and where the name came from, for messages."""
    if given:
        return given, "--challenge"
    if named_by:
        return named_by, "the document"
    if os.environ.get(ENV_CHALLENGE):
        return os.environ[ENV_CHALLENGE], f"${ENV_CHALLENGE}"
    return DEFAULT_CHALLENGE, "the default"


def load_named_challenge(name: str, source: str) -> ChallengeSpec:
    """``load_challenge``, with an unknown name's error naming where it came from."""
    try:
        return load_challenge(name)
    except UsageError as exc:
        raise UsageError(
            f"{exc.message} (given by {source})", hint=exc.hint, where=exc.where or source
        ) from None


def resolve_challenge(given: str | None, named_by: str | None = None) -> ChallengeSpec:
    return load_named_challenge(*challenge_source(given, named_by))


def given_challenge(name: str | None) -> ChallengeSpec | None:
    """``--challenge`` when given; otherwise None (the library reads the one podium.toml
    names)."""
    return load_named_challenge(name, "--challenge") if name else None


def signing_key(path: Path | None) -> KeyPair | None:
    """``--key``, else ``$PODIUM_SIGNING_KEY`` (a PEM file's path, or the PEM text)."""
    if path is not None:
        return load_private_key(path)
    env = os.environ.get(ENV_KEY, "").strip()
    if env.startswith("-----BEGIN"):
        try:
            return private_key_from_pem(env.encode(), where=f"${ENV_KEY}")
        except SignatureError as exc:
            raise UsageError(
                str(exc),
                hint="set it to a PEM file's path or its text (podium keys generate KEYFILE)",
            ) from None
    return load_private_key(Path(env)) if env else None


def signing_key_path(path: Path | None) -> Path | None:
    """The file ``signing_key`` reads the key from (None: none, or PEM text in the variable)."""
    if path is not None:
        return path
    env = os.environ.get(ENV_KEY, "").strip()
    return Path(env) if env and not env.startswith("-----BEGIN") else None


def require_signing_key(path: Path | None) -> KeyPair:
    """``signing_key``, for the commands that cannot work without one."""
    key = signing_key(path)
    if key is None:
        raise UsageError(
            "a signing key is needed",
            hint=f"pass --key KEYFILE or set ${ENV_KEY} (podium keys generate KEYFILE)",
        )
    return key
