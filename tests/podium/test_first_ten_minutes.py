"""The first ten minutes of a participant, an organizer and a viewer: one test (or a few)
per thing a newcomer tripped on, each named for what now happens instead.

The install line's own end-to-end proof (a fresh venv, ``pip install '...[participant]'``,
then init and validate) is ``tests/test_wheel.py``; the width tests are
``tests/podium/test_any_width.py``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from factories import make_report

from podium.cli.app import command, main
from podium.cli.render import metric_rows
from podium.signing import KeyPair
from schemas.challenge import list_challenges, load_challenge
from submission.freeze import freeze
from submission.scaffold import init_submission

REPO = Path(__file__).resolve().parents[2]
FAKE_DIGEST = "sha256:" + "ab" * 32


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def set_in_toml(directory: Path, after: str, lines: str) -> None:
    """Insert ``lines`` after the line ``after`` of ``directory``'s podium.toml."""
    path = directory / "podium.toml"
    text = path.read_text(encoding="utf-8")
    assert after in text
    path.write_text(text.replace(after + "\n", after + "\n" + lines, 1), encoding="utf-8")


# -- README, first read: how to install podium ---------------------------------------------


def test_the_readme_opens_with_the_two_commands_then_one_pip_line_per_role() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    head = readme.split("\n## ", 1)[0]  # before the first section: what a first read sees
    assert head.index("make demo") < head.index("make test") < head.index("pip install")
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for role in ("participant", "organizer", "viewer"):
        assert f"pip install '.[{role}]'" in head, role
        assert role in extras, role
    assert "podium --version" in head


# -- init --challenge C: a scaffold for that challenge ------------------------------------


def test_init_for_fast_gemma_picks_an_engine_it_allows_and_says_which(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "my-entry"
    code, out, err = run(["submission", "init", str(entry), "--challenge", "fast-gemma"], capsys)
    assert code == 0, err
    assert "vllm engine" in out and "the fast-gemma challenge allows" in out
    assert "--engine KIND" in out
    code, out, err = run(["submission", "validate", str(entry)], capsys)
    assert code == 0 and "is a valid submission" in out, out + err
    code, out, _ = run(
        ["submission", "init", str(tmp_path / "j"), "-c", "fast-gemma", "--json"], capsys
    )
    doc = json.loads(out)
    assert code == 0 and (doc["kind"], doc["kind_picked"]) == ("vllm", True)


@pytest.mark.parametrize("challenge", list_challenges())
def test_init_without_an_engine_validates_for_every_shipped_challenge(
    challenge: str, tmp_path: Path
) -> None:
    from submission.validate import validate_submission

    spec = load_challenge(challenge)
    result = init_submission(tmp_path / "e", spec, team="t")
    assert result.kind in spec.engine.kinds
    assert validate_submission(tmp_path / "e").ok


def test_an_engine_the_challenge_forbids_is_still_refused_when_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["submission", "init", str(tmp_path / "e"), "-c", "fast-gemma", "--engine", "baseline"]
    code, _, err = run(args, capsys)
    assert code == 2 and "does not allow the baseline engine" in err and "vllm, custom" in err


# -- a JSON knob, as JSON text or as an inline table --------------------------------------


WINNER_JSON = '{"method":"mtp","num_speculative_tokens":7}'


def test_a_json_knob_as_json_text_is_the_same_object_as_an_inline_table(tmp_path: Path) -> None:
    spec = load_challenge("fast-gemma")
    as_text, as_table = tmp_path / "text", tmp_path / "table"
    for directory, line in (
        (as_text, f"SPECULATIVE_CONFIG = '{WINNER_JSON}'\n"),
        (as_table, 'SPECULATIVE_CONFIG = { method = "mtp", num_speculative_tokens = 7 }\n'),
    ):
        init_submission(directory, spec, kind="vllm", team="t", entry="e")
        set_in_toml(directory, "[engine.config]", line)
    frozen = [freeze(d, base_digest=FAKE_DIGEST, write=False) for d in (as_text, as_table)]
    assert all(f.ok for f in frozen), [f.findings for f in frozen]
    configs = [f.manifest.engine.config for f in frozen]
    assert configs[0] == configs[1]
    assert configs[0]["SPECULATIVE_CONFIG"] == json.loads(WINNER_JSON)


def test_json_text_that_is_no_object_says_why_and_shows_both_forms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "e"
    init_submission(entry, load_challenge("fast-gemma"), kind="vllm", team="t", entry="e")
    set_in_toml(entry, "[engine.config]", "SPECULATIVE_CONFIG = '{\"method\": mtp}'\n")
    code, out, _ = run(["submission", "validate", str(entry), "--json"], capsys)
    (problem,) = json.loads(out)["findings"]
    assert code == 1 and problem["check_id"] == "config.schema"
    assert "not of type" not in problem["message"] and "is not JSON" in problem["message"]
    assert "SPECULATIVE_CONFIG = { method = " in problem["hint"]  # the inline table
    assert 'SPECULATIVE_CONFIG = \'{"method": ' in problem["hint"]  # and the JSON text


# -- a knob written under [engine.env] ------------------------------------------------------


@pytest.mark.parametrize("value", ['"188"', "-3", "188"])
def test_a_knob_under_engine_env_is_an_error_that_names_engine_config(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "e"
    init_submission(entry, load_challenge("fast-gemma"), kind="vllm", team="t", entry="e")
    path = entry / "podium.toml"
    path.write_text(path.read_text() + f"SLIDING_WINDOW = {value}\n")  # at the end: env
    code, out, _ = run(["submission", "validate", str(entry), "--json"], capsys)
    (problem,) = json.loads(out)["findings"]
    assert code == 1 and problem["check_id"] == "submission.config-schema"
    assert "SLIDING_WINDOW is a knob" in problem["message"]
    assert "[engine.config]" in problem["message"] and "[engine.config]" in problem["hint"]
    assert "write a string" not in (problem["hint"] or "")
    assert (
        problem["where"].startswith("podium.toml:")
        and "engine.env.SLIDING_WINDOW" in (problem["where"])
    )


def test_an_environment_variable_under_engine_env_is_still_fine(tmp_path: Path) -> None:
    from submission.validate import validate_submission

    entry = tmp_path / "e"
    init_submission(entry, load_challenge("fast-gemma"), kind="vllm", team="t", entry="e")
    path = entry / "podium.toml"
    path.write_text(path.read_text() + 'VLLM_LOGGING_LEVEL = "WARNING"\n')
    assert validate_submission(entry).ok


# -- a TOML syntax error and a missing Dockerfile: both -----------------------------------


def test_a_toml_error_is_reported_with_the_missing_dockerfile_and_a_hint_that_fits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "e"
    init_submission(entry, load_challenge("fast-gemma"), kind="vllm", team="t", entry="e")
    (entry / "Dockerfile").unlink()
    set_in_toml(entry, "[engine.config]", 'SPECULATIVE_CONFIG = {"method": "mtp"}\n')
    code, out, _ = run(["submission", "validate", str(entry), "--json"], capsys)
    findings = json.loads(out)["findings"]
    ids = [f["check_id"] for f in findings]
    assert code == 1 and ids == ["submission.config-parse", "submission.missing-dockerfile"]
    parse = findings[0]
    assert re.fullmatch(r"podium\.toml:\d+", parse["where"])
    assert "TOML strings need quotes" not in parse["hint"]
    assert "inline table" in parse["hint"] and "single quotes" in parse["hint"]


def test_a_bare_word_gets_the_quotes_hint_and_the_rest_of_the_file_is_still_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = tmp_path / "e"
    init_submission(entry, load_challenge("fast-gemma"), kind="vllm", team="t", entry="e")
    set_in_toml(entry, "[engine.config]", "DTYPE = bfloat16\nPRECACHE_BENCH = 1\n")
    code, out, _ = run(["submission", "validate", str(entry), "--json"], capsys)
    findings = json.loads(out)["findings"]
    assert code == 1
    assert [f["check_id"] for f in findings] == ["submission.config-parse", "engine.precache"]
    assert 'TOML strings need quotes: write "bfloat16"' in findings[0]["hint"]


# -- the verification summary: what a participant reads ------------------------------------


def _report_file(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    doc = make_report(KeyPair.generate())
    doc["metrics"]["tps"]["stability"] = {"planned_trials": 3, "max_trials": 7, "max_ci": 0.05}
    doc["checks"] += [
        {"id": "tps.stability", "status": "pass", "summary": "3 trials agree"},
        {"id": "integrity.reference-decode", "status": "fail", "summary": "91% agreement"},
    ]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, doc


def test_the_summary_shows_verdict_tps_interval_ppl_cap_and_failing_checks_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _doc = _report_file(tmp_path)
    code, out, _ = run(["report", "show", str(path)], capsys)
    assert code == 0 and out.startswith("VERIFIED team-a/entry-1")
    assert "1234.50 (95% CI 1209.81 .. 1259.19)" in out
    assert "2.3 (under the cap, 2.4150)" in out
    assert "integrity.reference-decode" in out and "91% agreement" in out
    assert "tps.stability" not in out and "3 trials agree" not in out  # passed: counted only
    assert "checks: 2 pass, 1 fail (of 3)" in out
    for internal in ("stability planned trials", "max trials", "max ci", "tokens per trial"):
        assert internal not in out.lower(), internal
    assert f"podium report show {path} --details" in out


def test_details_and_json_have_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = _report_file(tmp_path)
    code, out, _ = run(["report", "show", str(path), "--details"], capsys)
    assert code == 0
    for label, _value in metric_rows(doc["metrics"]):
        assert label in out, label
    assert "TPS stability planned trials" in out and "tps.stability" in out
    code, out, _ = run(["report", "show", str(path), "--json"], capsys)
    shown = json.loads(out)["report_document"]["metrics"]["tps"]["stability"]
    assert shown == {"planned_trials": 3, "max_trials": 7, "max_ci": 0.05}


def test_verify_and_selfcheck_take_details(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["verify", "--help"], ["submission", "selfcheck", "--help"]):
        code, out, _ = run(args, capsys)
        assert code == 0 and "--details" in out, args


def test_a_verification_turns_off_the_weight_loading_bar() -> None:
    """transformers draws "Loading weights" with tqdm as the reference loads; the
    verification's own display is the only progress shown."""
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars
    from transformers.utils import logging as transformers_logging

    from podium.cli.verification import quiet_library_bars

    try:
        quiet_library_bars()
        assert are_progress_bars_disabled()
        assert not transformers_logging.is_progress_bar_enabled()
    finally:
        enable_progress_bars()
        transformers_logging.enable_progress_bar()


# -- every -c means the challenge it names ------------------------------------------------


def _tiny_entry(tmp_path: Path, name: str = "tiny-entry") -> Path:
    entry = tmp_path / name
    init_submission(entry, load_challenge("tiny"), kind="baseline", team="a", entry="b")
    return entry


@pytest.fixture
def tiny_bundle(tmp_path: Path) -> Path:
    from submission.bundle import package

    packaged = package(
        _tiny_entry(tmp_path), tmp_path / "dist", build=False, base_digest=FAKE_DIGEST
    )
    assert packaged.bundle is not None
    return packaged.bundle.path


@pytest.mark.docker  # the base is pinned from the local image: inspect refuses an unchecked one
def test_inspect_checks_the_bundle_against_the_challenge_c_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from submission.bundle import package

    packaged = package(_tiny_entry(tmp_path), tmp_path / "dist", build=False)
    assert packaged.bundle is not None
    tiny_bundle = packaged.bundle.path
    code, out, _ = run(
        ["submission", "inspect", str(tiny_bundle), "-c", "fast-gemma", "--json"], capsys
    )
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False
    assert (doc["challenge"], doc["bundle_challenge"]) == ("fast-gemma", "tiny")
    ids = {f["check_id"] for f in doc["findings"]}
    assert {"bundle.challenge-mismatch", "bundle.model-pin", "engine.kind-not-allowed"} <= ids
    code, out, _ = run(["submission", "inspect", str(tiny_bundle), "--json"], capsys)
    assert code == 0 and json.loads(out)["challenge"] == "tiny"


def _c_cases(tmp_path: Path, bundle: Path) -> dict[tuple[str, ...], tuple[list[str], Any]]:
    """Every command that takes -c: the line that runs it with ``-c fast-gemma`` against a
    tiny entry or bundle, and how its JSON shows that fast-gemma was applied."""
    entry = _tiny_entry(tmp_path, "c-entry")
    original = tmp_path / "fgc"
    original.mkdir()
    (original / "manifest.json").write_text(
        json.dumps(
            {
                "name": "mtp",
                "model_id": "google/gemma-4-E4B-it",
                "served_model_name": "gemma",
                "port": 8000,
                "serve": ["python3", "serve.py"],
                "env": {"SLIDING_WINDOW": "188"},
            }
        )
    )
    (original / "serve.py").write_text("print('serve')\n")
    env = tmp_path / "winning.env"
    env.write_text("PRECACHE_BENCH=1\n")
    out = str(tmp_path / "out")

    def kind_refused(doc: dict[str, Any]) -> bool:
        return "engine.kind-not-allowed" in {f["check_id"] for f in doc["findings"]}

    def rejected_for_fast_gemma(doc: dict[str, Any]) -> bool:
        report = doc["report_document"]
        return report["challenge"]["id"] == "fast-gemma" and "bundle.challenge-mismatch" in {
            f["check_id"] for f in report["findings"]
        }

    cap = load_challenge("fast-gemma").quality.cap
    return {
        ("submission", "init"): (
            ["submission", "init", str(tmp_path / "new")],
            lambda doc: doc["challenge"] == "fast-gemma",
        ),
        ("submission", "validate"): (
            ["submission", "validate", str(entry)],
            lambda doc: doc["challenge"] == "fast-gemma" and kind_refused(doc),
        ),
        ("submission", "knobs"): (
            ["submission", "knobs", str(entry)],
            lambda doc: doc["challenge"] == "fast-gemma",
        ),
        ("submission", "freeze"): (
            ["submission", "freeze", str(entry), "--base-digest", FAKE_DIGEST],
            kind_refused,
        ),
        ("submission", "package"): (
            [
                "submission",
                "package",
                str(entry),
                "-o",
                out,
                "--no-build",
                "--base-digest",
                FAKE_DIGEST,
            ],
            kind_refused,
        ),
        ("submission", "inspect"): (
            ["submission", "inspect", str(bundle)],
            lambda doc: doc["challenge"] == "fast-gemma",
        ),
        ("submission", "import"): (
            ["submission", "import", str(original), "-o", str(tmp_path / "imported")],
            lambda doc: (
                tomllib.loads((tmp_path / "imported" / "podium.toml").read_text())["challenge"]
                == "fast-gemma"
            ),
        ),
        ("submission", "selfcheck"): (
            ["submission", "selfcheck", str(bundle), "--runner", "process", "-o", out],
            rejected_for_fast_gemma,
        ),
        ("submission", "sweep"): (
            [
                "submission",
                "sweep",
                str(entry),
                "--knob",
                "DTYPE=float32",
                "--runner",
                "process",
                "--margin",
                "0.1",
                "-o",
                str(tmp_path / "sweep"),
            ],
            lambda doc: doc["cap"] == pytest.approx(cap),
        ),
        ("verify",): (
            ["verify", str(bundle), "--runner", "process", "-o", out],
            rejected_for_fast_gemma,
        ),
        ("schema", "validate"): (
            ["schema", "validate", "engine-config", str(env)],
            lambda doc: "engine.precache" in {p["id"] for p in doc["problems"]},
        ),
    }


#: -c on these filters (leaderboard show: tests/leaderboard/test_cli_options.py) or is
#: the harness job's (podium harness, started by the dispatcher with the bundle's own);
#: a locked spec by path: the worker, the dispatcher and the queue in
#: tests/verifier/scale/test_challenge_option.py, every view in
#: tests/leaderboard/test_view_with_a_given_spec.py, heldout check in
#: tests/podium/test_organizer_challenge.py
C_TESTED_ELSEWHERE = {
    ("server",),  # tests/competition: the door's spec, by name or path
    ("leaderboard", "show"),
    ("harness",),
    ("worker",),
    ("dispatch",),
    ("queue", "submit"),
    ("queue", "list"),
    ("queue", "show"),
    ("queue", "cancel"),
    ("leaderboard", "export"),
    ("leaderboard", "verify"),
    ("leaderboard", "serve"),
    ("leaderboard", "build-site"),
    ("heldout", "check"),
}


def _commands_with_c(node: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if hasattr(node, "commands"):
        return [
            c for name, sub in node.commands.items() for c in _commands_with_c(sub, (*path, name))
        ]
    takes = any("-c" in getattr(p, "opts", []) for p in node.params)
    return [path] if takes else []


def test_every_command_that_takes_c_is_tested_here(tmp_path: Path, tiny_bundle: Path) -> None:
    found = set(_commands_with_c(command()))
    assert found == set(_c_cases(tmp_path, tiny_bundle)) | C_TESTED_ELSEWHERE


def test_c_applies_wherever_it_is_accepted(
    tmp_path: Path, tiny_bundle: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, (args, applied) in _c_cases(tmp_path, tiny_bundle).items():
        _, out, err = run([*args, "-c", "fast-gemma", "--json"], capsys)
        assert applied(json.loads(out)), (name, out[-2000:], err[-2000:])


# -- a path that does not exist is an error everywhere ----------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["queue", "list", "-q", "/nonexistent/q"],
        ["queue", "show", "abc", "-q", "/nonexistent/q"],
        ["queue", "cancel", "abc", "-q", "/nonexistent/q"],
        ["worker", "-q", "/nonexistent/q", "--once"],
        ["dispatch", "--backend", "local", "-q", "/nonexistent/q", "--once"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_queue_folder_that_does_not_exist_is_a_usage_error(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "k.pem"
    run(["keys", "generate", str(key)], capsys)
    code, out, _ = run(
        [*args, "--key", str(key), "--json"] if args[0] != "queue" else [*args, "--json"], capsys
    )
    error = json.loads(out)["error"]
    assert code == 2 and "no queue at /nonexistent/q: no such folder" in error["message"]
    assert "podium queue submit" in error["hint"]


@pytest.mark.parametrize(
    "args",
    [
        ["submission", "validate", "/nonexistent/e"],
        ["submission", "knobs", "/nonexistent/e"],
        ["submission", "freeze", "/nonexistent/e"],
        ["submission", "package", "/nonexistent/e"],
        ["submission", "sweep", "/nonexistent/e", "--knob", "DTYPE=float32"],
        ["submission", "selfcheck", "/nonexistent/e"],
        ["submission", "inspect", "/nonexistent/e.tar.gz"],
        ["verify", "/nonexistent/e.tar.gz"],
        ["report", "show", "/nonexistent/report.json"],
        ["leaderboard", "show", "-s", "/nonexistent/store"],
        ["schema", "validate", "report", "/nonexistent/report.json"],
        ["engine", "vllm-args", "/nonexistent/winning.env"],
        ["keys", "id", "/nonexistent/k.pub"],
    ],
    ids=lambda a: " ".join(a[:2]),
)
def test_a_path_that_does_not_exist_is_a_usage_error_that_names_it(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run([*args, "--json"], capsys)
    error = json.loads(out)["error"]
    assert code == 2 and "/nonexistent/" in error["message"], error


def test_an_empty_queue_folder_lists_no_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["queue", "list", "-q", str(tmp_path)], capsys)
    assert code == 0 and out.strip() == "no requests"


def test_a_heldout_folder_that_does_not_exist_is_a_usage_error_before_any_build(
    tiny_bundle: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["verify", str(tiny_bundle), "--heldout", str(tmp_path / "nope"), "-o", str(tmp_path)]
    code, _, err = run(args, capsys)
    assert code == 2 and "--heldout" in err and "no such directory" in err
    assert not (tmp_path / "report.json").exists()


# -- dispatch -h and docs/scale.md: which backend can make a row VERIFIED ------------------


def test_dispatch_help_says_which_runner_gives_verified_rows_for_which_challenge(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(["dispatch", "-h"], capsys)
    text = " ".join(out.split())
    assert code == 0 and "UNOFFICIAL" in text and "integrity.isolation" in text
    sandboxed = [n for n in list_challenges() if load_challenge(n).check("isolation")["enabled"]]
    assert "fast-gemma" in sandboxed
    assert f"require it: {', '.join(sandboxed)}" in text
    assert "podium worker --runner local-docker" in text


def test_scale_docs_have_the_table_and_the_worker_quick_start() -> None:
    doc = (REPO / "docs" / "scale.md").read_text(encoding="utf-8")
    section = doc.split("## Which runner can make a row VERIFIED", 1)[1].split("\n## ", 1)[0]
    row = next(ln for ln in section.splitlines() if ln.startswith("| `fast-gemma`"))
    assert "podium worker --runner local-docker" in row and "UNOFFICIAL" in row
    quick = section.split("quick start", 1)[1]
    assert "pip install 'podium[organizer]'" in quick
    assert re.search(r"podium worker --queue hf://datasets/\S+", quick)


# -- keys generate: the private key kept out of git ----------------------------------------


@pytest.fixture
def git_tree(tmp_path: Path) -> Path:
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    tree = tmp_path / "tree"
    tree.mkdir()
    subprocess.run([git, "init", "-q", str(tree)], check=True)
    return tree


def test_keys_generate_warns_inside_a_git_tree_that_would_track_the_key(
    git_tree: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["keys", "generate", str(git_tree / "keys" / "organizer.pem")], capsys)
    assert code == 0 and "warning:" in err and ".gitignore" in err and str(git_tree) in err
    code, out, _ = run(
        ["keys", "generate", str(git_tree / "keys" / "second.pem"), "--json"], capsys
    )
    (warning,) = json.loads(out)["warnings"]
    assert "does not ignore it" in warning


def test_keys_generate_is_quiet_where_git_ignores_the_key(
    git_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copyfile(REPO / ".gitignore", git_tree / ".gitignore")  # the project's own
    code, _, err = run(["keys", "generate", str(git_tree / "keys" / "organizer.pem")], capsys)
    assert code == 0 and "warning" not in err
    outside = tmp_path / "elsewhere" / "k.pem"
    code, _, err = run(["keys", "generate", str(outside)], capsys)
    assert code == 0 and "warning" not in err


# -- tab completion: challenge names, engine kinds, schema kinds ---------------------------


def complete(
    words: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[str]:
    """What bash completion offers for the last word of ``words``, through the protocol
    `podium --install-completion` installs (the _PODIUM_COMPLETE variable)."""
    monkeypatch.setenv("_PODIUM_COMPLETE", "complete_bash")
    monkeypatch.setenv("COMP_WORDS", words)
    monkeypatch.setenv("COMP_CWORD", str(len(words.split(" ")) - 1))
    code, out, _ = run([], capsys)
    assert code == 0
    return out.split()


def test_completion_offers_challenge_names_engine_kinds_and_schema_kinds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    challenges = list_challenges()
    assert complete("podium submission init x --challenge ", monkeypatch, capsys) == challenges
    assert complete("podium submission validate x -c fa", monkeypatch, capsys) == ["fast-gemma"]
    assert complete("podium verify b.tar.gz -c ", monkeypatch, capsys) == challenges
    assert complete("podium challenge show ", monkeypatch, capsys) == challenges
    assert complete("podium leaderboard show -c t", monkeypatch, capsys) == ["tiny"]
    assert complete("podium submission init x --engine ", monkeypatch, capsys) == [
        "vllm",
        "baseline",
        "custom",
    ]
    kinds = complete("podium schema validate ", monkeypatch, capsys)
    assert "engine-config" in kinds and "report" in kinds and "challenge" in kinds
    assert complete("podium schema show eng", monkeypatch, capsys) == ["engine-config"]
    assert complete("podium schema validate engine-config f -c ", monkeypatch, capsys) == challenges
