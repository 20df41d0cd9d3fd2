"""``calibration.margins.attainable`` and ``calibration.attainable``: whether any allowance of
the reference decode that grows with the scoring loss e could put honest rows at half of it
and a double spender at 1.5 times it, and against which honest row it cannot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from calibration import attainable, margins

CAP_RATIO = 1.05


def _row(
    name: str, kind: str, e: float, gap: float, *, ratio: float = 1.02, decode: float = 1.07
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "ppl_ratio": ratio,
        "decode_ratio": decode,
        "allowance": {"excess": e},
        "mean_gap": gap,
        "worst_answer_gap": 4 * gap,
        "large_gap_share": gap / 4,
    }


def test_a_spender_within_three_times_an_honest_row_of_no_larger_e_is_out_of_reach() -> None:
    rows = [
        _row("honest 24", "honest", 0.012, 0.05),
        _row("spender 24/12", "cheat", 0.012, 0.08),  # 1.6x the honest row at the same e
    ]
    res = margins.attainable(rows, CAP_RATIO)
    p = res["spenders"]["spender 24/12"]
    assert p["bounds"]["decode_mean"] == {
        "ratio": pytest.approx(1.6),
        "value": 0.08,
        "honest": "honest 24",
        "honest_value": 0.05,
    }
    assert not p["separable"]
    assert res["inseparable"] == ["spender 24/12"]
    assert res["weakest"] == pytest.approx(1.6)
    assert res["needed"] == pytest.approx(3.0)


def test_honest_rows_of_a_larger_e_or_over_the_cap_do_not_count_against_a_spender() -> None:
    rows = [
        _row("honest 32", "honest", 0.008, 0.01),
        _row("honest 16", "honest", 0.036, 0.07),  # larger e: its allowance may be larger
        _row("honest 12", "honest", 0.006, 0.5, ratio=1.07),  # over the cap: the cap's business
        _row("spender 32/12", "cheat", 0.008, 0.09),
    ]
    res = margins.attainable(rows, CAP_RATIO)
    p = res["spenders"]["spender 32/12"]
    assert p["bounds"]["decode_mean"]["honest"] == "honest 32"
    assert p["best_ratio"] == pytest.approx(9.0)
    assert p["separable"] and res["inseparable"] == []
    assert res["honest_rows"] == ["honest 16", "honest 32"]


def test_a_spender_whose_decode_is_inside_the_cap_is_not_judged() -> None:
    rows = [
        _row("honest 24", "honest", 0.012, 0.05),
        _row("spender 32/24", "cheat", 0.008, 0.05, decode=1.014),
    ]
    assert margins.attainable(rows, CAP_RATIO)["spenders"] == {}


def test_the_table_names_each_spender_and_whether_3x_is_reachable() -> None:
    rows = [_row("honest 24", "honest", 0.012, 0.05), _row("spender 24/12", "cheat", 0.012, 0.08)]
    table = margins.attainable_table(margins.attainable(rows, CAP_RATIO))
    assert "| spender 24/12 | 0.0120 | 1.60 (honest 24) |" in table
    assert table.rstrip().endswith("| 1.60 | **no** |")


def test_repeated_honest_runs_count_as_rows_with_the_e_of_the_row_they_repeat() -> None:
    calibration = {
        "rows": [
            _row("undeclared W=24", "honest", 0.012, 0.03),
            _row("spender 24/12", "cheat", 0.012, 0.08),
            {"name": "fp32", "kind": "honest"},  # not a margin row: no decode ratio
        ]
    }
    repeated = {
        "rows": {
            "undeclared W=24": {
                "per_run": [
                    {
                        "run": 0,
                        "reference_decode_mean_gap": 0.05,
                        "reference_decode_large_gap_share": 0.01,
                    }
                ]
            },
            "undeclared W=99": {"per_run": [{"run": 0}]},  # no such margin row: skipped
        }
    }
    rows = attainable.cpu_rows(calibration, repeated)
    assert [r["name"] for r in rows] == [
        "undeclared W=24",
        "spender 24/12",
        "undeclared W=24 (run 0)",
    ]
    assert rows[2]["allowance"] == {"excess": 0.012} and rows[2]["worst_answer_gap"] is None
    res = margins.attainable(rows, CAP_RATIO)["spenders"]["spender 24/12"]
    assert res["bounds"]["decode_mean"]["honest"] == "undeclared W=24 (run 0)"
    assert res["bounds"]["decode_answer"]["honest"] == "undeclared W=24"


def test_the_command_writes_its_result_and_says_what_is_out_of_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cal = tmp_path / "calibration.json"
    cal.write_text(
        json.dumps(
            {
                "rows": [
                    _row("undeclared W=24", "honest", 0.012, 0.05),
                    _row("spender 24/12", "cheat", 0.012, 0.08),
                ]
            }
        )
    )
    monkeypatch.setattr(attainable, "CALIBRATION", cal)
    monkeypatch.setattr(attainable, "REPEATED", tmp_path / "none.json")
    monkeypatch.setattr(attainable, "GPU", tmp_path / "none.json")
    out = tmp_path / "attainable.json"
    assert attainable.main(["--out", str(out)]) == 0
    assert "Out of reach of any such bound: spender 24/12." in capsys.readouterr().out
    assert json.loads(out.read_text())["machines"]["cpu"]["inseparable"] == ["spender 24/12"]
    monkeypatch.setattr(attainable, "CALIBRATION", tmp_path / "none.json")
    assert attainable.main(["--out", str(out)]) == 2


def test_an_honest_row_whose_e_differs_by_rounding_counts_as_the_same_e() -> None:
    rows = [
        _row("honest 32", "honest", 0.008255122398, 0.017),
        _row("spender 32/12", "cheat", 0.008255121901, 0.09),  # the same records, rounded
    ]
    p = margins.attainable(rows, CAP_RATIO)["spenders"]["spender 32/12"]
    assert p["bounds"]["decode_mean"]["honest"] == "honest 32"
