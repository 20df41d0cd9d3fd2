"""What a new participant meets on the command line: counts that agree, inputs named with
where they came from, a readable knob list, the help conventions of hf, docker and vLLM,
and output that survives a narrow terminal and a pipe."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from podium.cli.app import command, main
from podium.cli.output import error_document
from podium.cli.render import Signature, render_report
from podium.errors import BundleError
from schemas.challenge import load_challenge
from submission.scaffold import init_submission


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    out = capsys.readouterr()
    return int(done.value.code or 0), out.out, out.err


def _leaves(node: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not hasattr(node, "commands"):
        return [path]
    found = [path]
    for name, sub in node.commands.items():
        found += _leaves(sub, (*path, name))
    return found


# -- item 1: counts agree, severities labelled ---------------------------------------------


def test_schema_validate_says_as_many_problems_as_it_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = tmp_path / "typo.env"
    env.write_text(
        "MAX_MODEL_LENN=512\nGPU_MEMORY_UTILISATION=0.8\nSLIDING_WINDOW=0\nPRECACHE_BENCH=1\n"
    )
    args = ["schema", "validate", "engine-config", str(env), "-c", "fast-gemma"]
    code, out, _ = run(args, capsys)
    listed = [ln for ln in out.splitlines() if ln.startswith("  ") and "hint:" not in ln]
    assert code == 1 and len(listed) == 4
    assert sum(ln.startswith("  error ") for ln in listed) == 2
    assert sum(ln.startswith("  warning ") for ln in listed) == 2
    assert out.splitlines()[-1].startswith("2 errors, 2 warnings in ")
    code, out, _ = run([*args, "--engine", "vllm", "--json"], capsys)
    doc = json.loads(out)
    assert code == 1 and (doc["errors"], doc["warnings"]) == (4, 0)
    assert all(p["severity"] in ("error", "warning") for p in doc["problems"])
    (typo,) = [p for p in doc["problems"] if "MAX_MODEL_LENN" in p["message"]]
    assert typo["where"] == f"{env}:1 MAX_MODEL_LENN"


# -- items 4 and 7: the bad input, where it came from, what would be accepted -------------


def test_an_unknown_challenge_is_named_with_its_source_and_the_closest_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(["challenge", "show", "tinny"], capsys)
    assert code == 2 and "unknown challenge 'tinny'" in err and "did you mean 'tiny'?" in err
    monkeypatch.setenv("PODIUM_CHALLENGE", "nope")
    code, out, _ = run(["submission", "init", str(tmp_path / "x"), "--json"], capsys)
    error = json.loads(out)["error"]
    assert code == 2 and "$PODIUM_CHALLENGE" in error["message"] and "'nope'" in error["message"]
    assert "fast-gemma" in error["hint"] and "tiny" in error["hint"]
    code, _, err = run(["submission", "init", str(tmp_path / "y"), "-c", "fast-gema"], capsys)
    assert code == 2 and "(given by --challenge)" in err and "did you mean 'fast-gemma'?" in err


def test_a_bundle_error_carries_its_finding_id_in_json() -> None:
    doc = error_document(BundleError("a link leaves the bundle", finding_id="bundle.link"))
    assert doc["error"]["finding_id"] == "bundle.link"


# -- item 8: the knobs, readable ------------------------------------------------------------


def test_challenge_show_lists_every_allowed_knob_with_values_and_engines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = load_challenge("fast-gemma")
    code, out, _ = run(["challenge", "show", "fast-gemma"], capsys)
    assert code == 0
    assert spec.engine.allowed_knobs is not None and len(spec.engine.allowed_knobs) == 28
    for knob in spec.engine.allowed_knobs:
        assert f"\n  {knob} " in out, knob
    assert "forbidden:" not in out
    (model,) = [ln for ln in out.splitlines() if ln.startswith("  MODEL ")]
    assert "only google/gemma-4-E4B-it" in model and "[vllm]" in model
    (mml,) = [ln for ln in out.splitlines() if ln.startswith("  MAX_MODEL_LEN ")]
    assert "integer 16..1048576" in mml and "[vllm]" in mml  # the only kind fast-gemma allows
    (lp,) = [ln for ln in out.splitlines() if ln.startswith("  LOGPROBS_MODE ")]
    assert "only raw_logprobs" in lp
    code, out, _ = run(["challenge", "show", "fast-gemma", "--json"], capsys)
    assert len(json.loads(out)["knobs"]) == 28


def test_submission_knobs_shows_the_entrys_values_and_what_its_engine_ignores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = tmp_path / "e"
    init_submission(directory, load_challenge("tiny"), kind="baseline", team="a", entry="b")
    code, out, _ = run(["submission", "knobs", str(directory)], capsys)
    reads, ignores = out.split("knobs the baseline engine ignores")
    assert code == 0 and "\n  DTYPE " in reads and "\n  GPU_MEMORY_UTILIZATION " in ignores
    assert '= "float32"' in reads
    code, out, _ = run(["submission", "knobs", str(directory), "--json"], capsys)
    doc = json.loads(out)
    assert doc["engine"] == "baseline" and "CENTROID_TOP_K" in doc["ignored_by_engine"]


# -- item 9: conventions people bring --------------------------------------------------------


def test_minus_h_works_on_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    for path in _leaves(command()):
        code, out, _ = run([*path, "-h"], capsys)
        assert code == 0 and out.startswith("Usage: podium"), path


def test_help_has_metavars_not_braces_or_python_types(capsys: pytest.CaptureFixture[str]) -> None:
    for path in _leaves(command()):
        _, out, _ = run([*path, "--help"], capsys)
        assert "{" not in out.splitlines()[0], path
        assert "<list[" not in out and "<path>" not in out and "<str>" not in out, path
        assert "<int>" not in out and "<float>" not in out, path
    _, out, _ = run(["submission", "validate", "--help"], capsys)
    assert out.startswith("Usage: podium submission validate [OPTIONS] DIR\n")
    assert "-c, --challenge CHALLENGE" in out


def test_top_level_help_groups_commands_by_role_with_uncut_summaries(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, out, _ = run(["--help"], capsys)
    sections = [ln for ln in out.splitlines() if ln.startswith("Commands for")]
    assert sections[:3] == [
        "Commands for the participant:",
        "Commands for the organizer:",
        "Commands for the viewer:",
    ]
    assert out.index("\n  submission ") < out.index("\n  verify ") < out.index("\n  leaderboard ")
    assert "--install-completion" in out
    for group in ([], ["submission"], ["leaderboard"], ["queue"]):
        _, out, _ = run([*group, "--help"], capsys)
        listing = out.split("Commands", 1)[1]
        assert "..." not in listing.replace("NAME=V1,V2,...", ""), group


# -- item 10: narrow terminals and pipes -----------------------------------------------------


def _report(speedup: float = 0.26, baseline: float = 473.9) -> dict[str, Any]:
    return {
        "verdict": "VERIFIED",
        "mode": "verify",
        "submission": {"team": "t", "entry": "e", "manifest_sha256": "ab" * 32},
        "challenge": {"id": "tiny", "version": "1"},
        "metrics": {
            "tps": {"median": 123.456789, "ci95": [120.1234, 126.5678], "cv": 0.01},
            "ppl": {"value": 2.3456, "cap": 2.42},
            "baseline_tps": baseline,
            "speedup": speedup,
        },
        "checks": [],
        "findings": [],
    }


def test_a_narrow_terminal_never_cuts_a_number() -> None:
    buf = io.StringIO()
    con = Console(file=buf, width=60, force_terminal=False, soft_wrap=False)
    render_report(con, _report(), Signature("unsigned"))
    out = buf.getvalue()
    assert "…" not in out and "123.46" in out and "120.12 .. 126.57" in out


def test_piped_output_is_not_wrapped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    directory = tmp_path / "e"
    init_submission(directory, load_challenge("tiny"), kind="baseline", team="a", entry="b")
    (directory / "Dockerfile").unlink()
    _, out, _ = run(["submission", "validate", str(directory)], capsys)
    (line,) = [ln for ln in out.splitlines() if "submission.missing-dockerfile" in ln]
    assert line.endswith("the verifier rebuilds the image from it.") and len(line) > 60


# -- item 11: the speed-up names its baseline ------------------------------------------------


def test_the_speed_up_says_which_baseline_and_why() -> None:
    buf = io.StringIO()
    render_report(Console(file=buf, width=160), _report(), Signature("unsigned"))
    out = buf.getvalue()
    assert "0.26x over the baseline's 473.9 TPS" in out
    assert "vLLM 0.32.0" in out and "2 cores" in out and "not on this run's" in out
