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


def test_a_pair_is_as_far_apart_as_its_better_choice_lets_it_be() -> None:
    result = analyse(ROWS)
    pair = result["pairs"]["24/12"]
    assert pair["records_scored_mild"] == pytest.approx(0.09 / 0.02)
    assert pair["records_scored_harsh"] == pytest.approx(0.08 / 0.012)
    assert pair["apart"] == pytest.approx(
        min(
            pair["records_scored_mild"] / result["honest_gap_over_e_chat"],
            pair["records_scored_harsh"] / result["honest_e_chat_over_e_text"],
        )
    )
    assert result["pairs"]["16/12"]["apart"] < pair["apart"]
