"""The first screen a new user reads: a speed-up that names the machine its baseline came
from, a skipped check named with its reason, ``next:`` lines with the paths this run knows,
and progress and findings that keep their columns at 60, 80 and 120 columns."""

from __future__ import annotations

import io
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from podium.cli.findings_view import INDENT, print_findings
from podium.cli.progress import LABEL_WIDTH, RichEvents
from podium.cli.render import Signature, render_report
from podium.cli.verification import _next_step
from schemas.findings import Finding
from verifier.precision.words import STAGE_NAMES

WIDTHS = (60, 80, 120)


def _report() -> dict[str, Any]:
    """The demo's sample entry as its report has it: VERIFIED, slower than the baseline's
    number, which the tiny challenge measured on podium's CI machine."""
    return {
        "verdict": "VERIFIED",
        "submission": {"team": "podium", "entry": "tiny-baseline", "manifest_sha256": "ab" * 32},
        "challenge": {"id": "tiny", "version": "1.0.0"},
        "mode": "official",
        "metrics": {
            "tps": {"median": 346.1, "ci95": [340.2, 351.0]},
            "ppl": {"value": 23.41, "cap": 24.57},
            "baseline_tps": 473.9,
            "speedup": 0.73,
        },
        "checks": [
            {"id": "tps.token-count", "status": "pass", "summary": "all counted"},
            {
                "id": "reference.self-test",
                "status": "skip",
                "summary": "the reference runs on the CPU: no GPU attention path to test",
            },
        ],
        "findings": [],
    }


def _rendered(width: int) -> str:
    con = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    render_report(con, _report(), Signature("signed", key_id="k1"), details=False)
    return con.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", WIDTHS)
def test_the_speed_up_names_the_machine_its_baseline_came_from_never_this_hardware(
    width: int,
) -> None:
    out = " ".join(_rendered(width).split())
    assert "this hardware" not in out
    assert "0.73x over the baseline's 473.9 TPS on CPU: AMD EPYC, 2 cores (podium's CI" in out
    assert "measured on CPU: AMD EPYC, 2 cores (podium's CI machine)" in out
    assert "not on this run's" in out


def test_a_skipped_check_is_named_with_its_reason() -> None:
    out = " ".join(_rendered(120).split())
    assert "1 pass, 1 skip" in out
    assert "reference.self-test" in out
    assert "no GPU attention path to test" in out
    assert "tps.token-count" not in out  # a passed check stays in --details


def _outcome(tmp_path: Path, verdict: str = "VERIFIED", signed: bool = True) -> Any:
    return SimpleNamespace(
        verdict=verdict, signed=signed, report_path=tmp_path / "report.json", report={}
    )


def test_next_lines_carry_the_paths_this_run_knows(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "demo.pem"
    key.parent.mkdir()
    key.write_text("x")
    key.with_name("demo.pem.pub").write_text("x")
    bundle = tmp_path / "dist" / "podium-tiny.tar.gz"
    published = {"published": {"ok": True, "store": str(tmp_path / "board")}}
    shown = _next_step(
        _outcome(tmp_path), published, self_check=False, source=None, paths=(bundle, key)
    )
    assert shown == f"podium leaderboard show --store {tmp_path}/board --pubkey {key}.pub"
    signed = _next_step(_outcome(tmp_path), {}, self_check=False, source=None, paths=(bundle, key))
    assert f"--key {key} " in signed and "KEYFILE" not in signed
    checked = _next_step(
        _outcome(tmp_path, signed=False), {}, self_check=True, source=bundle, paths=(bundle, None)
    )
    assert f"podium submission push {bundle} --repo ORG/NAME" in checked
    assert "BUNDLE" not in checked


def _plain_lines(width: int, names: list[str]) -> list[str]:
    con = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    events = RichEvents(con)
    for name in names:
        events.stage(name, "running")
        events.stage(name, "ok" if name != "ready" else "skipped")
    return con.file.getvalue().splitlines()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", WIDTHS)
def test_progress_labels_keep_their_column_at_any_width(width: int) -> None:
    assert max(len(n) for n in STAGE_NAMES) <= LABEL_WIDTH  # every stage fits the column
    names = [*sorted(STAGE_NAMES), "a-stage-name-longer-than-the-column"]
    done = [ln for ln in _plain_lines(width, names) if not ln.endswith("...")]
    marks = {re.search(r" (ok|skipped)", ln).start() for ln in done}  # type: ignore[union-attr]
    assert marks == {2 + LABEL_WIDTH}, done
    assert all(len(ln) <= width for ln in done)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_live_bars_keep_their_columns_and_never_show_a_count_they_do_not_know(
    width: int,
) -> None:
    con = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
    events = RichEvents(con)
    events.stage("reference-engine", "running")  # no total: a spinner and a time only
    events.progress("ppl", 3, 40)
    assert events._bar is not None
    con.print(events._bar.get_renderable())
    events._bar.stop()
    lines = [ln for ln in con.file.getvalue().splitlines() if ln.strip()]  # type: ignore[attr-defined]
    assert len(lines) == 2 and all(len(ln) <= width for ln in lines), lines
    assert "/?" not in "".join(lines) and "3/40" in lines[1]
    # one column each: the labels padded to one width, the times ending in one column
    assert [ln[2 : 2 + LABEL_WIDTH] for ln in lines] == ["reference-engine", "ppl".ljust(16)]
    assert len({len(ln) for ln in lines}) == 1, lines


@pytest.mark.parametrize("width", WIDTHS)
def test_findings_wrap_under_their_own_column_at_any_width(width: int) -> None:
    long = "a message long enough to wrap at sixty columns and at eighty, " * 3
    findings = [
        Finding("config.member", "error", long.strip(), hint="did you mean x? " * 8, where="p:3"),
        Finding("engine.knob-ignored", "warning", "the vllm engine ignores DEVICE."),
    ]
    con = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
    print_findings(con, findings)
    lines = con.file.getvalue().splitlines()  # type: ignore[attr-defined]
    heads = [ln for ln in lines if not ln.startswith(" " * INDENT)]
    assert [h.split()[0] for h in heads] == ["error", "warning"]
    assert all(h.startswith("  ") and h[INDENT] == "[" for h in heads), heads
    assert all(len(ln) <= width and ln == ln.rstrip() for ln in lines), lines
    assert len(lines) > 3  # the long message and hint did wrap, under column INDENT
