"""The command line as a whole: exit codes, JSON errors, options that mean one thing."""

from __future__ import annotations

import json
import pkgutil
from pathlib import Path
from typing import Any

import pytest
import typer

import podium.cli
from podium.cli import options
from podium.cli.app import app, main
from podium.signing import KeyPair, write_keypair


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


USAGE_ERRORS = [
    ["report", "verify", "report.json"],  # a required option missing
    ["verify", "x.tar.gz", "--reported-tps", "abc"],  # a number that is not one
    ["challenge", "list", "--bogus"],  # an unknown flag
    ["nosuch"],  # an unknown command
    ["verify", "x.tar.gz", "--runner", "turbo"],  # not one of the choices
]


@pytest.mark.parametrize("args", USAGE_ERRORS, ids=lambda a: " ".join(a))
def test_usage_errors_exit_2_and_print_a_json_error(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run([*args, "--json"], capsys)
    assert code == 2
    error = json.loads(out)["error"]
    assert error["type"] == "UsageError" and error["exit_code"] == 2
    assert error["message"] and "--help" in error["hint"]


@pytest.mark.parametrize("args", USAGE_ERRORS, ids=lambda a: " ".join(a))
def test_usage_errors_for_humans_say_what_and_where_help_is(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(args, capsys)
    assert code == 2 and out == ""
    assert "Error:" in err and "--help" in err and "Traceback" not in err


def test_a_hostile_name_is_an_error_not_a_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["challenge", "show", "[/]oops"], capsys)
    assert code == 2
    assert "unknown challenge '[/]oops'" in err and "Traceback" not in err


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every leaf command of typer's click tree (whichever click typer carries)."""
    found = []
    for name, command in group.commands.items():
        path = f"{prefix} {name}".strip()
        if hasattr(command, "commands"):
            found += _commands(command, path)
        else:
            found.append((path, command))
    return found


def _click_tree() -> list[tuple[str, Any]]:
    return _commands(typer.main.get_command(app))


def test_every_command_takes_json() -> None:
    missing = [
        path
        for path, command in _click_tree()
        if not any("--json" in p.opts for p in command.params)
    ]
    assert missing == []


def test_every_cli_module_is_wired_in() -> None:
    """A command module that fails to import breaks ``podium`` itself, never silently.

    Each ``*_cmd`` module is named here with the top-level command it mounts commands
    under (a group's own modules, such as ``submission_sweep_cmd``, under the group)."""
    names = {m.name for m in pkgutil.iter_modules(podium.cli.__path__)}
    modules = {n for n in names if n.endswith("_cmd")}
    top = {path.split()[0] for path, _ in _click_tree()}
    wired = {
        "engine_cmd": "engine",
        "submission_cmd": "submission",
        "submission_bundle_cmd": "submission",
        "submission_sweep_cmd": "submission",
        "submission_server_cmd": "submission",
        "competition_cmd": "server",  # and the admin group, `competition`
        "verify_cmd": "verify",
        "leaderboard_cmd": "leaderboard",
        "leaderboard_publish_cmd": "leaderboard",
        "queue_cmd": "queue",
        "worker_cmd": "worker",
        "harness_cmd": "harness",
        "heldout_cmd": "heldout",
        "challenge_cmd": "challenge",
        "keys_cmd": "keys",
        "report_cmd": "report",
        "schema_cmd": "schema",
    }
    assert modules == set(wired)
    assert {wired[m] for m in modules} | {"competition"} <= top


def test_the_internal_harness_command_is_hidden_but_works(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(["--help"], capsys)
    assert code == 0 and "\n  harness " not in out and "\n  worker " in out
    code, out, _ = run(["harness", "--help"], capsys)
    assert code == 0 and "--server" in out


def test_runner_is_a_choice_that_help_lists(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["verify", "--help"], capsys)
    assert code == 0
    assert all(r in out for r in ("local-docker", "process", "hf-jobs"))
    code, out, _ = run(["submission", "selfcheck", "--help"], capsys)
    assert "local-docker" in out and "process" in out and "hf-jobs" not in out


def test_shared_options_have_the_same_names_everywhere() -> None:
    """-o/--out, -q/--queue, -s/--store, -k/--key, -c/--challenge: one spelling each."""
    want = {
        "out": {"-o", "--out"},
        "queue": {"-q", "--queue"},
        "key": {"-k", "--key"},
        "challenge": {"-c", "--challenge"},
    }
    for path, command in _click_tree():
        for param in command.params:
            if param.name in want and param.param_type_name == "option":
                assert set(param.opts) == want[param.name], (path, param.opts)


def test_challenge_default_is_the_document_then_the_environment_then_tiny(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(options.ENV_CHALLENGE, raising=False)
    assert options.challenge_name(None) == "tiny"
    assert options.challenge_name(None, "fast-gemma") == "fast-gemma"
    assert options.challenge_name("tiny", "fast-gemma") == "tiny"
    monkeypatch.setenv(options.ENV_CHALLENGE, "fast-gemma")
    assert options.challenge_name(None) == "fast-gemma"
    assert options.challenge_name(None, "tiny") == "tiny"


def test_schema_validate_follows_the_one_challenge_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "winning.env"
    config.write_text("MODEL=google/gemma-4-E4B-it\n")  # fast-gemma's model, not tiny's
    monkeypatch.delenv(options.ENV_CHALLENGE, raising=False)
    code, out, _ = run(["schema", "validate", "engine-config", str(config), "--json"], capsys)
    assert code == 1 and [p["id"] for p in json.loads(out)["problems"]] == ["engine.model"]
    monkeypatch.setenv(options.ENV_CHALLENGE, "fast-gemma")
    code, out, _ = run(["schema", "validate", "engine-config", str(config), "--json"], capsys)
    assert code == 0 and json.loads(out)["valid"] is True
    code, out, _ = run(["schema", "validate", "engine-config", str(config), "-c", "tiny"], capsys)
    assert code == 1


def test_signing_key_comes_from_one_variable_as_a_path_or_the_pem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pair = KeyPair.generate()
    path = tmp_path / "k.pem"
    write_keypair(pair, path)
    monkeypatch.delenv(options.ENV_KEY, raising=False)
    assert options.signing_key(None) is None
    monkeypatch.setenv(options.ENV_KEY, str(path))
    assert options.signing_key(None).key_id == pair.key_id  # type: ignore[union-attr]
    monkeypatch.setenv(options.ENV_KEY, pair.private_pem().decode())
    assert options.require_signing_key(None).key_id == pair.key_id
    monkeypatch.setenv(options.ENV_KEY, "-----BEGIN PRIVATE KEY-----\nnot a key\n")
    with pytest.raises(Exception, match="PODIUM_SIGNING_KEY"):
        options.signing_key(None)
