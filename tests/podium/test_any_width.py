"""``report show``, ``leaderboard show`` and ``challenge show`` at 60, 80 and 120 columns:
every label and every number whole, nothing cut with an ellipsis, nothing drawn past the
edge; below the width a table needs, ``label: value`` lines instead.

Each view is drawn twice per width: by the CLI into a pipe (``COLUMNS``; lines are never
wrapped there) and on a terminal of that width (rich wraps what is too long, so a label or
a number could be broken there if a table squeezed it).
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from factories import make_report, seeded_records
from rich.console import Console
from rich.table import Table

from leaderboard.publish import head_signer
from leaderboard.stores.local import LocalStore
from podium.cli.app import main
from podium.cli.challenge_view import describe
from podium.cli.fit import Fit, fit
from podium.cli.output import FittingConsole
from podium.cli.render import Signature, metric_rows, render_report, summary_rows
from podium.signing import KeyPair, write_keypair
from schemas.challenge import load_challenge
from submission.knobs import knob_table

WIDTHS = (60, 80, 120)
NUMBER = re.compile(r"\d[\d,.]*\d|\d")


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    with pytest.raises(SystemExit) as done:
        main(args)
    return int(done.value.code or 0), capsys.readouterr().out


def terminal(width: int) -> tuple[Console, io.StringIO]:
    """A console as the CLI makes one on a terminal of ``width`` columns."""
    buf = io.StringIO()
    con = FittingConsole(file=buf, width=width, soft_wrap=False, highlight=False, emoji=False)
    return con, buf


def assert_whole(out: str, width: int | None, labels: list[str], values: list[str]) -> None:
    assert "…" not in out
    for label in labels:
        assert label in out, f"label {label!r} is not whole at {width}:\n{out}"
    for value in values:
        for number in NUMBER.findall(value):
            assert number in out, f"number {number!r} is not whole at {width}:\n{out}"
    if width is not None:  # on a terminal, nothing is drawn past its edge
        assert max(len(line) for line in out.splitlines()) <= width


# -- report show ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    doc = make_report(KeyPair.generate(), tps=146.41, ppl=23.4048, cap=24.575)
    doc["metrics"]["tps"]["stability"] = {"planned_trials": 3, "max_trials": 7}
    doc["checks"].append(
        {"id": "integrity.reference-decode", "status": "fail", "summary": "91% agreement"}
    )
    return doc


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("details", [False, True], ids=["summary", "details"])
def test_report_show_keeps_every_label_and_digit(
    width: int,
    details: bool,
    report: dict[str, Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = (metric_rows if details else summary_rows)(report["metrics"])
    labels = [name for name, _ in rows] + ["integrity.reference-decode", "91% agreement"]
    values = [value for _, value in rows]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    monkeypatch.setenv("COLUMNS", str(width))
    code, out = run(["report", "show", str(path), *(["--details"] if details else [])], capsys)
    assert code == 0
    assert_whole(out, None, labels, values)
    con, buf = terminal(width)
    render_report(con, report, Signature("unsigned"), details=details)
    assert_whole(buf.getvalue(), width, labels, values)


def test_a_narrow_report_is_label_value_lines_and_a_wide_one_a_table(
    report: dict[str, Any],
) -> None:
    narrow, buf = terminal(60)
    render_report(narrow, report, Signature("unsigned"), details=True)
    out = buf.getvalue()
    assert "TPS tokens per trial: 4096" in out and "metric" not in out
    wide, buf = terminal(120)
    render_report(wide, report, Signature("unsigned"), details=True)
    assert re.search(r"│ TPS tokens per trial\s+│\s+4096 │", buf.getvalue())


# -- leaderboard show ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalStore, Path, list[Any]]:
    keypair = KeyPair.generate()
    root = tmp_path_factory.mktemp("board")
    public = write_keypair(keypair, root / "keys" / "organizer.pem")
    records = seeded_records(keypair)
    st = LocalStore(root / "store")
    st.publish_key(keypair.public_pem())
    st.publish(records, head_signer(keypair))
    return st, public, records


@pytest.mark.parametrize("width", WIDTHS)
def test_leaderboard_show_keeps_every_label_id_and_digit(
    width: int,
    store: tuple[LocalStore, Path, list[Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    st, public, _ = store
    args = ["leaderboard", "show", "--store", st.url, "--pubkey", str(public)]
    code, doc_text = run([*args, "--json"], capsys)
    (board,) = json.loads(doc_text)["boards"]
    headers = ["#", "team", "entry", "TPS [95% CI]", "runs", "PPL", "cap", "speed-up", "key"]
    labels = [*headers, "date", "verdict", "reason"]
    values: list[str] = []
    for row in board["ranked"]:
        labels += [row["team"], row["entry"]]
        values.append(f"{row['tps']:,.1f}")
        if row.get("ppl") is not None:
            values.append(f"{row['ppl']:.3f}")
    for row in board["others"]:
        labels += [row["team"], row["entry"], row["verdict"]]
        labels += row["reason"].split()  # prose: it may wrap between its words
    monkeypatch.setenv("COLUMNS", str(width))
    code, out = run(args, capsys)
    assert code == 0
    assert_whole(out, None, labels, values)
    assert out.count("2026-11-2") == len(board["ranked"]) + len(board["others"])

    from leaderboard.trust import build_trust
    from leaderboard.views.board import boards_of, read_checked
    from leaderboard.views.table import render

    check = read_checked(st, build_trust([public]), None)
    con, buf = terminal(width)
    render(boards_of(check, challenge=None, best_per_team=True), con, check)
    assert_whole(buf.getvalue(), width, labels, values)


# -- challenge show --------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["fast-gemma", "tiny"])
def test_challenge_show_keeps_every_label_and_digit(
    width: int, name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = load_challenge(name)
    labels = ["model", "hardware", "PPL cap", "TPS", "limits", "engines"]
    labels += [row.name for row in knob_table(spec)] + [spec.model.repo_id, spec.model.revision]
    values = [
        f"{spec.quality.cap:.4f}",
        f"{spec.tps.num_prompts} prompts x {spec.tps.max_tokens} tokens",
        f"{spec.tps.trials} trials",
    ]
    monkeypatch.setenv("COLUMNS", str(width))
    code, out = run(["challenge", "show", name], capsys)
    assert code == 0
    assert_whole(out, None, labels, values)
    con, buf = terminal(width)
    describe(spec, con)
    assert_whole(buf.getvalue(), width, labels, [])


# -- the rule itself -------------------------------------------------------------------------


def test_fit_wraps_prose_between_words_and_never_squeezes_an_id() -> None:
    table = Table(title="t")
    table.add_column("id")
    table.add_column("reason", overflow="fold")
    table.add_row("integrity.reference-decode", "a reason of several words that wraps at 60")
    con, buf = terminal(60)
    con.print(table)  # the CLI console fits every boxed table by itself
    out = buf.getvalue()
    assert "│ integrity.reference-decode │ a reason of several words" in out and "…" not in out
    assert "│ that wraps at 60" in out  # the prose wrapped, between two words
    assert max(len(line) for line in out.splitlines()) <= 60
    narrow, buf = terminal(30)
    narrow.print(fit(table))
    assert "id: integrity.reference-decode" in buf.getvalue()
    assert "  reason: a reason of several" in buf.getvalue()  # then wraps, between words


def test_a_grid_is_left_as_it_is() -> None:
    grid = Table.grid()
    assert fit(grid) is grid and isinstance(fit(Table()), Fit)
