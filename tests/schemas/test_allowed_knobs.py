"""A challenge's allow-list of knobs: a knob it does not name is a broken rule."""

from __future__ import annotations

import dataclasses

import pytest

from schemas.challenge import load_challenge
from schemas.engine_config import check_engine_config


def _with_allow_list(*knobs: str):  # type: ignore[no-untyped-def]
    spec = load_challenge("fast-gemma")
    return dataclasses.replace(
        spec, engine=dataclasses.replace(spec.engine, allowed_knobs=list(knobs))
    )


@pytest.mark.fires("config.knob-not-allowed")
def test_a_knob_outside_the_allow_list_is_an_error_naming_it() -> None:
    spec = _with_allow_list("MAX_MODEL_LEN")
    findings = check_engine_config({"MAX_MODEL_LEN": 4096, "SLIDING_WINDOW": 188}, spec)
    assert [(f.check_id, f.severity) for f in findings] == [("config.knob-not-allowed", "error")]
    assert "SLIDING_WINDOW" in findings[0].message


@pytest.mark.quiet("config.knob-not-allowed")
def test_knobs_on_the_allow_list_pass() -> None:
    spec = _with_allow_list("MAX_MODEL_LEN", "SLIDING_WINDOW")
    assert check_engine_config({"MAX_MODEL_LEN": 4096, "SLIDING_WINDOW": 188}, spec) == []
