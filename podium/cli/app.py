"""The root of the ``podium`` command line.

Exit codes: 0 ok / verified, 1 findings / rejected, 2 usage, 3 could not evaluate.
Tracebacks only with ``--debug``. Every command takes ``--json``: one JSON document on
stdout, errors included (``{"error": {...}}``); the two servers (``engine serve``,
``leaderboard serve``) print one JSON line once they listen.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

import typer

from podium import __version__
from podium.cli import (
    challenge_cmd,
    competition_cmd,
    engine_cmd,
    harness_cmd,
    heldout_cmd,
    keys_cmd,
    leaderboard_cmd,
    queue_cmd,
    report_cmd,
    schema_cmd,
    submission_cmd,
    verify_cmd,
    worker_cmd,
)
from podium.cli.conventions import HELP_OPTIONS, RoleGroup, apply
from podium.cli.output import console, print_error, set_json
from podium.errors import EXIT_CANNOT_EVALUATE, EXIT_USAGE, PodiumError, UsageError
from podium.untrusted import clean

HELP = """\
podium: verified LLM inference-speed competitions.

Participants package an engine config into a bundle; organizers rebuild it, measure
TPS and PPL blind, sign a report and publish it to a leaderboard.

Exit codes: 0 ok or VERIFIED, 1 findings or REJECTED, 2 usage error, 3 could not evaluate.
Every command takes --json (errors too are then one JSON document); --debug shows
tracebacks; -h shows any command's help. Shell completion: podium --install-completion.

Examples:

  podium challenge show fast-gemma

  podium submission init my-entry

  podium schema validate engine-config winning.env --challenge fast-gemma
"""

app = typer.Typer(
    name="podium",
    help=HELP,
    cls=RoleGroup,
    context_settings=HELP_OPTIONS,
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
#: every top-level command module (``*_cmd``) mounts itself with ``register(root)``; a
#: group's own modules are mounted by the group's (``submission_cmd``, ``leaderboard_cmd``);
#: `podium --help` lists them by role (``conventions.ROLES``)
COMMAND_MODULES = (
    challenge_cmd,
    schema_cmd,
    keys_cmd,
    report_cmd,
    engine_cmd,
    submission_cmd,
    verify_cmd,
    leaderboard_cmd,
    queue_cmd,
    worker_cmd,
    competition_cmd,
    heldout_cmd,
    harness_cmd,
)
for _module in COMMAND_MODULES:
    _module.register(app)


def command() -> Any:
    """The click command tree of ``app``, with the help conventions applied."""
    return apply(typer.main.get_command(app))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"podium {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks on errors."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    # ``--debug`` is read by ``main`` before the line is parsed: it is accepted anywhere
    del debug


def _click_class(name: str) -> type[Exception]:
    """The click exception class ``name`` that this typer raises.

    typer either re-exports click or carries its own copy of it; ``typer.BadParameter``
    derives from that click's ``UsageError`` and ``ClickException`` either way, so they
    are found without importing click by name.
    """
    for cls in typer.BadParameter.__mro__:
        if cls.__name__ == name:
            return cls
    raise LookupError(f"typer.BadParameter does not derive from a click {name}")


ClickException = _click_class("ClickException")


def _usage_error(exc: Exception) -> UsageError:
    """A click usage error as podium's, naming the command's ``--help``."""
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or "podium"
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    return UsageError(message, hint=f"see `{command} --help`")


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]  # accepted anywhere on the line
    set_json("--json" in args)
    try:
        rv = command().main(args=args, prog_name="podium", standalone_mode=False)
    except typer.Abort:
        console(stderr=True).print("aborted")
        sys.exit(130)
    except ClickException as exc:
        from podium.cli.output import json_mode

        if json_mode():
            print_error(_usage_error(exc))
        else:
            exc.show()  # type: ignore[attr-defined]
        sys.exit(EXIT_USAGE)
    except PodiumError as exc:
        if debug:
            traceback.print_exc()
        print_error(exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        console(stderr=True).print("interrupted")
        sys.exit(130)
    except Exception as exc:  # a bug in podium: one line unless --debug
        if debug:
            traceback.print_exc()
        else:
            console(stderr=True).print(
                f"internal error: {type(exc).__name__}: {clean(exc)}\n"
                "hint: rerun with --debug for the traceback",
                markup=False,
            )
        sys.exit(EXIT_CANNOT_EVALUATE)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
