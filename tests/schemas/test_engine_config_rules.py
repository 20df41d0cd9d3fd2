"""The engine config schema accepts the published winning config and rejects each forbidden rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemas.challenge import load_challenge
from schemas.engine_config import check_engine_config, load_engine_config, parse_env_text

EXAMPLES = Path(__file__).parent / "examples"


def test_winning_config_parses_with_types() -> None:
    config = load_engine_config(EXAMPLES / "engine-config.winning.env")
    assert config["SLIDING_WINDOW"] == 188
    assert config["GPU_MEMORY_UTILIZATION"] == 0.9
    assert config["SPECULATIVE_CONFIG"] == {"method": "mtp", "num_speculative_tokens": 7}


def test_winning_config_is_accepted_by_fast_gemma() -> None:
    config = load_engine_config(EXAMPLES / "engine-config.winning.env")
    assert check_engine_config(config, load_challenge("fast-gemma")) == []


@pytest.mark.parametrize(
    ("line", "finding_id", "key"),
    [
        ("MODEL=google/gemma-3-1b-it", "engine.model", "MODEL"),
        ("PRECACHE_BENCH=1", "engine.precache", "PRECACHE_BENCH"),
        (
            'SPECULATIVE_CONFIG={"method":"mtp","num_speculative_tokens":7,"rejection_sample_method":"synthetic"}',
            "engine.synthetic-acceptance",
            "SPECULATIVE_CONFIG.rejection_sample_method",
        ),
        ("LOGPROBS_MODE=raw_logits", "engine.logprobs-mode", "LOGPROBS_MODE"),
        (
            'LIMIT_MM_PER_PROMPT={"image":0,"audio":0}',
            "engine.multimodal-off",
            "LIMIT_MM_PER_PROMPT",
        ),
        ("LANGUAGE_MODEL_ONLY=1", "engine.language-model-only", "LANGUAGE_MODEL_ONLY"),
    ],
)
def test_each_forbidden_rule_is_one_sentence_naming_the_key(
    line: str, finding_id: str, key: str
) -> None:
    name = line.split("=", 1)[0]
    base = [
        kept
        for kept in (EXAMPLES / "engine-config.winning.env").read_text().splitlines()
        if not kept.startswith(name + "=")
    ]
    config = parse_env_text("\n".join([*base, line]) + "\n")
    findings = check_engine_config(config, load_challenge("fast-gemma"))
    assert [f.check_id for f in findings] == [finding_id]
    message = findings[0].message
    assert (
        message.startswith(key.split(".")[0]) and message.count(". ") == 0 and message.endswith(".")
    )


def test_free_engine_variables_are_recorded_not_rejected() -> None:
    config = parse_env_text("VLLM_USE_V1=1\nMY_KERNEL_TWEAK=fast\n")
    assert check_engine_config(config, load_challenge("fast-gemma")) == []
    assert config == {"VLLM_USE_V1": 1, "MY_KERNEL_TWEAK": "fast"}


@pytest.mark.fires("config.schema")
def test_type_and_bound_errors_name_the_key() -> None:
    findings = check_engine_config({"SLIDING_WINDOW": 0, "MAX_NUM_SEQS": "many"})
    messages = " ".join(f.message for f in findings)
    assert "SLIDING_WINDOW" in messages and "MAX_NUM_SEQS" in messages
    assert all(f.check_id == "config.schema" for f in findings)
