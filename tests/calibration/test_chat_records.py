"""``calibration.chat_records``: how far a forging pair sits from the honest rows' ratios."""

from __future__ import annotations

import pytest

from calibration.chat_records import analyse


def _row(e_text: float, e_chat: float, gap: float) -> dict[str, float]:
    return {"e_text": e_text, "e_chat": e_chat, "gap": gap}


ROWS = {
    "W=48": _row(0.003, 0.0003, 0.0006),  # below the floor: noise, not a ratio
    "W=32": _row(0.008, 0.005, 0.008),
    "W=24": _row(0.012, 0.02, 0.03),
    "W=16": _row(0.036, 0.05, 0.05),
    "W=12": _row(0.063, 0.08, 0.09),
    "W=8": _row(0.115, 0.18, 0.2),
}


def test_the_honest_ratios_are_the_largest_above_the_floor() -> None:
    result = analyse(ROWS)
    assert result["honest_gap_over_e_chat"] == pytest.approx(0.008 / 0.005)
    assert result["honest_e_chat_over_e_text"] == pytest.approx(0.02 / 0.012)


def test_a_forger_takes_the_record_loss_both_bounds_allow_which_beats_either_pure_choice() -> None:
    result = analyse(ROWS)
    r1, r2 = result["honest_gap_over_e_chat"], result["honest_e_chat_over_e_text"]
    pair = result["pairs"]["24/12"]
    assert pair["records_scored_mild"] == pytest.approx(0.09 / 0.02 / r1)
    assert pair["records_scored_harsh"] == pytest.approx(0.08 / 0.012 / r2)
    assert pair["apart"] == pytest.approx(0.09 / 0.012 / (r1 * r2))
    for p in result["pairs"].values():
        assert p["apart"] <= min(p["records_scored_mild"], p["records_scored_harsh"]) + 1e-12
    assert result["pairs"]["16/12"]["apart"] < pair["apart"]


def test_the_records_never_widen_what_the_comparison_without_them_gives() -> None:
    result = analyse(ROWS)
    assert result["honest_gap_over_e_text"] == pytest.approx(0.03 / 0.012)
    for p in result["pairs"].values():
        assert p["apart_without_records"] >= p["apart"] - 1e-12
    assert result["pairs"]["24/12"]["apart_without_records"] == pytest.approx(
        0.09 / 0.012 / (0.03 / 0.012)
    )
