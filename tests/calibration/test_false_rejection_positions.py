"""``calibration.false_rejection --positions``: recorded honest runs under today's allowances."""

from __future__ import annotations

import pytest

from calibration import tiny_budget, tiny_spec
from calibration.false_rejection import positions

SETTINGS = tiny_spec()["integrity"]["reference_decode"]


def _run(mean_gap: float, large: float, e: float | None = None) -> dict[str, object]:
    run: dict[str, object] = {
        "reference_decode_mean_gap": mean_gap,
        "reference_decode_large_gap_share": large,
    }
    return run if e is None else {**run, "scoring_loss": e}


def test_the_worst_run_of_a_row_is_placed_under_the_allowances_shipped_now() -> None:
    env = {"UNDECLARED_WINDOW": "24"}
    result = {
        "rows": {
            "undeclared W=24": {
                "env": env,
                "verdicts": {"VERIFIED": 2},
                "per_run": [_run(0.02, 0.01), _run(0.05, 0.015)],
            }
        }
    }
    calibration = {"rows": [{"env": env, "allowance": {"excess": 0.0124}}]}
    [row] = positions(result, calibration)
    b = tiny_budget()  # the allowances come from the spec's budget, never from e
    mean_allowed = SETTINGS["budget_factor"] * b + SETTINGS["mean_margin_nats"]
    large_allowed = SETTINGS["large_share"] + SETTINGS["large_share_factor"] * b
    assert row["largest_mean_gap"] == 0.05
    assert row["decode_mean"] == pytest.approx(0.05 / mean_allowed)
    assert row["decode_large"] == pytest.approx(0.015 / large_allowed)


def test_a_runs_own_scoring_loss_is_recorded_and_moves_no_allowance() -> None:
    result = {
        "rows": {
            "r": {"env": {}, "verdicts": {}, "per_run": [_run(0.03, 0.0, e=0.0366)]},
        }
    }
    [row] = positions(result, {"rows": [{"env": {}, "allowance": {"excess": 0.0}}]})
    assert row["e"] == 0.0366
    assert row["decode_mean"] == pytest.approx(
        0.03 / (SETTINGS["budget_factor"] * tiny_budget() + SETTINGS["mean_margin_nats"])
    )
