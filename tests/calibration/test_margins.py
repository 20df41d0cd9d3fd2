"""``calibration.margins``: each row's position at each bound, and the separation stated from them.

Pure arithmetic on verification reports; the rows themselves are whole verifications that
``python -m calibration.calibrate`` runs (``margin_rows()``).
"""

from __future__ import annotations

from typing import Any

import pytest

from calibration import margins, tiny_budget
from calibration.rows import margin_rows
from calibration.rows import rows as table_rows

CAP_RATIO = 1.05


def _report(mean_gap: float, allowed_mean: float, self_gap: float) -> dict[str, Any]:
    decode = {
        "mean_gap": mean_gap,
        "worst_answer": {"mean_gap": 0.1},
        "large_gap_share": 0.0,
        "allowance": {"mean": allowed_mean, "answer": 0.4, "large_share": 0.02},
    }
    same = {
        "mean_self_gap": self_gap,
        "max_mean_self_gap": 0.005,
        "fraction": 0.99,
        "required_fraction": 0.95,
        "reference_top_left_out": 0.0,
        "max_reference_top_left_out": 0.02,
    }
    return {
        "checks": [
            {"id": "integrity.reference-decode", "details": decode},
            {"id": "integrity.same-path", "details": same},
        ]
    }


def test_a_position_is_the_value_over_what_the_bound_allows() -> None:
    at = margins.positions(_report(0.03, 0.06, 0.01))
    assert at["decode_mean"] == pytest.approx(0.5)
    assert at["decode_answer"] == pytest.approx(0.25)
    assert at["self_gap"] == pytest.approx(2.0)
    assert at["same_path_miss"] == pytest.approx(0.2)  # 1 % missed of 5 % allowed
    assert at["decode_large"] == 0.0


def test_a_bound_the_report_does_not_judge_has_no_position() -> None:
    assert margins.positions({"checks": []})["self_gap"] is None


def _summary(name: str, kind: str, ratio: float, decode: float, report: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "ppl_ratio": ratio,
        "decode_ratio": decode,
        "bounds": margins.positions(report),
    }


def test_separation_holds_when_honest_rows_sit_low_and_spenders_high_on_one_bound() -> None:
    rows = [
        _summary("honest", "honest", 1.04, 1.04, _report(0.03, 0.07, 0.0)),
        _summary("over the cap", "honest", 1.07, 1.07, _report(0.09, 0.07, 0.0)),
        _summary("spender", "cheat", 1.04, 1.07, _report(0.06, 0.07, 0.03)),
        _summary("mild spender", "cheat", 1.01, 1.04, _report(0.02, 0.07, 0.001)),
    ]
    sep = margins.separation(rows, CAP_RATIO)
    assert sep["honest_rows"] == ["honest"]  # the one over the cap is the cap's business
    assert sep["spender_rows"] == ["spender"]  # the mild one's decode is inside the cap
    assert sep["deciding"]["spender"] == {"bound": "self_gap", "position": pytest.approx(6.0)}
    assert sep["honest_ok"] and sep["spenders_ok"]
    assert sep["per_bound"]["decode_mean"]["honest_max"] == pytest.approx(0.03 / 0.07)


def test_an_honest_row_over_half_an_allowance_breaks_the_separation() -> None:
    rows = [_summary("honest", "honest", 1.04, 1.04, _report(0.05, 0.07, 0.0))]
    assert not margins.separation(rows, CAP_RATIO)["honest_ok"]


def test_the_margin_rows_are_honest_undeclared_approximations_and_double_spenders() -> None:
    rows = margin_rows()
    assert len({r.name for r in rows}) == len(rows)
    assert all(r.decode_ratio is not None and r.example == "tiny-baseline" for r in rows)
    honest = [r for r in rows if r.kind == "honest"]
    spenders = [r for r in rows if r.kind == "cheat"]
    assert {r.engine for r in honest} == {"doubles.honest:Undeclared"}
    engines = {
        "doubles.decode:DecodeWindow",
        "doubles.decode:ForgedDecodeWindow",
        "doubles.decode:RoutedDecodeWindow",
    }
    assert {r.engine for r in spenders} == engines
    # pairs whose decode alone breaks the cap are among them, and every one scores milder
    assert any(r.decode_ratio and r.decode_ratio > CAP_RATIO for r in spenders)
    assert all(int(r.env["CHEAT_SCORE_WINDOW"]) > int(r.env["CHEAT_WINDOW"]) for r in spenders)
    assert {r.name for r in rows} <= {r.name for r in table_rows()}


def test_at_rates_puts_recorded_gaps_under_the_budget_allowances_given() -> None:
    summary = {
        "mean_gap": 0.05,
        "worst_answer_gap": 0.2,
        "large_gap_share": 0.01,
        "allowance": {"excess": 0.0124},
        "bounds": {"decode_mean": 0.59, "self_gap": 0.0},
    }
    settings = {
        "budget_factor": 1.6,
        "mean_margin_nats": 0.01,
        "answer_margin_nats": 0.4,
        "answer_factor": 8.0,
        "large_share": 0.02,
        "large_share_factor": 1.0,
    }
    bounds = margins.at_rates(summary, settings)["bounds"]
    b = tiny_budget()
    assert bounds["decode_mean"] == pytest.approx(0.05 / (1.6 * b + 0.01))
    assert bounds["decode_answer"] == pytest.approx(0.2 / (0.4 + 8 * b))
    assert bounds["decode_large"] == pytest.approx(0.01 / (0.02 + b))
    assert bounds["self_gap"] == 0.0
    assert margins.at_rates({"bounds": {}}, settings) == {"bounds": {}}
