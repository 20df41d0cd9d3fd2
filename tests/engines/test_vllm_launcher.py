"""The vLLM launcher's command line: every schema knob's mapping, merging, order, env.

What happens at run time (the proxy, a real launch of a fake ``vllm``) is in
test_vllm_launch.py.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from knob_samples import NEEDS, PUBLISHED, SAMPLES

from engines.vllm_launcher import KNOBS, ConfigError, build_env, build_serve_args
from engines.vllm_launcher.args import (
    SERVER_MODULE,
    DrafterCopy,
    drafter_copy,
    launcher_settings,
    to_bool,
)
from engines.vllm_launcher.drafter import write_drafter_copy
from engines.vllm_launcher.warmup import synthetic_prompts

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "schemas/json/engine-config.schema.json").read_text())

COMMAND = ["python3", "-m", SERVER_MODULE]


def serve_args(config: dict[str, Any], **kwargs: Any) -> list[str]:
    kwargs.setdefault("model_path", "/model")
    kwargs.setdefault("port", 8001)
    kwargs.setdefault("host", "127.0.0.1")
    kwargs.setdefault("drafter_dir", "/tmp/podium-drafter")
    return build_serve_args(config, **kwargs)


def option(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


# --- every knob -------------------------------------------------------------------------


def test_every_schema_knob_has_exactly_one_mapping() -> None:
    schema_knobs = set(SCHEMA["properties"])
    assert schema_knobs - set(KNOBS) == set(), "schema knobs the launcher does not map"
    assert set(KNOBS) - schema_knobs == set(), "launcher maps knobs the schema lacks"
    assert set(SAMPLES) == schema_knobs, "add a sample value for every new schema knob"


@pytest.mark.parametrize("knob", sorted(SCHEMA["properties"]))
def test_each_knob_lands_where_its_mapping_says(knob: str) -> None:
    base = dict(NEEDS.get(knob, {}))
    config = {**base, knob: SAMPLES[knob]}
    kind, _ = KNOBS[knob]
    argv_before, argv_after = serve_args(base), serve_args(config)
    env_before, env_after = build_env(base), build_env(config)
    settings_before, settings_after = launcher_settings(base), launcher_settings(config)
    changed = {
        "argv": argv_before != argv_after,
        "env": env_before != env_after,
        "launcher": settings_before != settings_after,
    }
    expected = {
        "flag": {"argv": True, "env": False, "launcher": False},
        "merged": {"argv": True, "env": False, "launcher": False},
        # the drafter is served from the launcher's copy, whose config carries the knob
        "drafter": {"argv": True, "env": False, "launcher": False},
        "env": {"argv": False, "env": True, "launcher": False},
        "launcher": {"argv": False, "env": False, "launcher": True},
        "recorded": {"argv": False, "env": False, "launcher": False},
    }[kind]
    assert changed == expected
    if kind == "drafter":
        assert drafter_copy(base, drafter_dir="/tmp/d") is None
        assert drafter_copy(config, drafter_dir="/tmp/d") is not None


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"SERVED_MODEL_NAME": "gemma"}, ["--served-model-name", "gemma"]),
        ({"MAX_MODEL_LEN": 4096}, ["--max-model-len", "4096"]),
        ({"GPU_MEMORY_UTILIZATION": 0.9}, ["--gpu-memory-utilization", "0.9"]),
        ({"GPU_MEMORY_UTILIZATION": 0.85}, ["--gpu-memory-utilization", "0.85"]),
        ({"MAX_NUM_BATCHED_TOKENS": 8192}, ["--max-num-batched-tokens", "8192"]),
        ({"MAX_NUM_SEQS": 4}, ["--max-num-seqs", "4"]),
        ({"DTYPE": "bfloat16"}, ["--dtype", "bfloat16"]),
        ({"QUANTIZATION": "fp8"}, ["--quantization", "fp8"]),
        ({"KV_CACHE_DTYPE": "fp8_e4m3"}, ["--kv-cache-dtype", "fp8_e4m3"]),
        ({"ENFORCE_EAGER": True}, ["--enforce-eager"]),
        ({"ENABLE_PREFIX_CACHING": True}, ["--enable-prefix-caching"]),
        ({"ENABLE_PREFIX_CACHING": 0}, ["--no-enable-prefix-caching"]),
        ({"ENABLE_CHUNKED_PREFILL": 1}, ["--enable-chunked-prefill"]),
        ({"ENABLE_CHUNKED_PREFILL": False}, ["--no-enable-chunked-prefill"]),
        ({"MAX_LOGPROBS": 20}, ["--max-logprobs", "20"]),
        ({"LOGPROBS_MODE": "raw_logprobs"}, ["--logprobs-mode", "raw_logprobs"]),
        ({"SEED": 0}, ["--seed", "0"]),
        ({"LIMIT_MM_PER_PROMPT": {"image": 0, "audio": 0}}, ["--limit-mm-per-prompt"]),
        ({"LANGUAGE_MODEL_ONLY": "true"}, ["--language-model-only"]),
        ({"COMPILATION_CONFIG": {"level": 3}}, ["--compilation-config", '{"level":3}']),
        ({"HF_OVERRIDES": {"b": 1, "a": {"y": 2, "x": 1}}}, ["--hf-overrides"]),
    ],
)
def test_flag_values(config: dict[str, Any], expected: list[str]) -> None:
    argv = serve_args(config)
    start = argv.index(expected[0])
    assert argv[start : start + len(expected)] == expected


def test_json_options_are_compact_with_sorted_keys() -> None:
    argv = serve_args(
        {
            "HF_OVERRIDES": {"b": 1, "a": {"y": 2, "x": 1}},
            "LIMIT_MM_PER_PROMPT": {"image": 0, "audio": 0},
        }
    )
    assert option(argv, "--hf-overrides") == '{"a":{"x":1,"y":2},"b":1}'
    assert option(argv, "--limit-mm-per-prompt") == '{"audio":0,"image":0}'


@pytest.mark.parametrize("knob", ["ENFORCE_EAGER", "LANGUAGE_MODEL_ONLY"])
@pytest.mark.parametrize("off", [False, 0, "false", "0"])
def test_one_way_flags_vanish_when_off(knob: str, off: Any) -> None:
    assert serve_args({knob: off}) == serve_args({})


@pytest.mark.parametrize(
    ("value", "expected"),
    [(True, True), (False, False), (1, True), (0, False), ("true", True), ("FALSE", False)],
)
def test_boolean_knobs_accept_true_false_0_1(value: Any, expected: bool) -> None:
    assert to_bool("ENFORCE_EAGER", value) is expected


@pytest.mark.parametrize("value", [2, -1, "yes", "", None, 1.0])
def test_boolean_knobs_refuse_anything_else(value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        serve_args({"ENABLE_PREFIX_CACHING": value})
    assert info.value.key == "ENABLE_PREFIX_CACHING"


@pytest.mark.parametrize(
    "config",
    [
        {"MAX_MODEL_LEN": "4096"},
        {"MAX_NUM_SEQS": True},
        {"GPU_MEMORY_UTILIZATION": "0.9"},
        {"HF_OVERRIDES": "{}"},
        {"DTYPE": ""},
        {"SPECULATIVE_CONFIG": {"num_speculative_tokens": 3}},
    ],
)
def test_badly_typed_knobs_are_refused_with_their_key(config: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as info:
        serve_args(config)
    assert info.value.key == next(iter(config))


# --- merging rules ----------------------------------------------------------------------


def test_sliding_window_merges_into_given_hf_overrides() -> None:
    config = {
        "SLIDING_WINDOW": 160,
        "HF_OVERRIDES": {"text_config": {"rope_theta": 10000}, "vision_config": {"x": 1}},
    }
    overrides = json.loads(option(serve_args(config), "--hf-overrides"))
    assert overrides == {
        "text_config": {"rope_theta": 10000, "sliding_window": 160},
        "vision_config": {"x": 1},
    }
    assert config["HF_OVERRIDES"] == {
        "text_config": {"rope_theta": 10000},
        "vision_config": {"x": 1},
    }, "the caller's config must not be modified"


def test_sliding_window_goes_where_the_checkpoint_keeps_it() -> None:
    multimodal = {"model_type": "gemma4", "text_config": {"sliding_window": 512}}
    text_only = {"model_type": "gemma4_text", "sliding_window": 64}
    config = {"SLIDING_WINDOW": 8}
    nested = option(serve_args(config, model_config=multimodal), "--hf-overrides")
    top = option(serve_args(config, model_config=text_only), "--hf-overrides")
    assert nested == '{"text_config":{"sliding_window":8}}'
    assert top == '{"sliding_window":8}'
    assert option(serve_args(config), "--hf-overrides") == nested, "unknown: the real shape"


def test_sliding_window_agreeing_with_hf_overrides_is_fine_contradicting_is_refused() -> None:
    same = {"SLIDING_WINDOW": 192, "HF_OVERRIDES": {"text_config": {"sliding_window": 192}}}
    assert option(serve_args(same), "--hf-overrides") == '{"text_config":{"sliding_window":192}}'
    with pytest.raises(ConfigError, match="contradicts") as info:
        serve_args(
            {"SLIDING_WINDOW": 128, "HF_OVERRIDES": {"text_config": {"sliding_window": 192}}}
        )
    assert info.value.key == "SLIDING_WINDOW"
    with pytest.raises(ConfigError, match=r"HF_OVERRIDES\.sliding_window"):
        serve_args(
            {"SLIDING_WINDOW": 8, "HF_OVERRIDES": {"sliding_window": 16}},
            model_config={"sliding_window": 64},
        )


def test_centroid_top_k_is_written_into_a_copy_of_the_drafter() -> None:
    config = {
        "CENTROID_TOP_K": 49,
        "SPECULATIVE_CONFIG": {"method": "mtp", "model": "/drafter", "num_speculative_tokens": 4},
    }
    spec = json.loads(option(serve_args(config, drafter_dir="/tmp/copy"), "--speculative-config"))
    assert spec == {"method": "mtp", "model": "/tmp/copy", "num_speculative_tokens": 4}
    assert drafter_copy(config, drafter_dir="/tmp/copy") == DrafterCopy(
        "/drafter", "/tmp/copy", {"centroid_intermediate_top_k": 49}
    )


def test_the_drafter_copy_links_the_pinned_files_and_rewrites_only_its_config(
    tmp_path: Path,
) -> None:
    source = tmp_path / "drafter"
    source.mkdir()
    (source / "config.json").write_text(json.dumps({"model_type": "gemma4_assistant", "x": 1}))
    (source / "model.safetensors").write_bytes(b"weights")
    copy = DrafterCopy(str(source), str(tmp_path / "copy"), {"centroid_intermediate_top_k": 49})
    changed = write_drafter_copy(copy)
    dest = tmp_path / "copy"
    assert changed == {"centroid_intermediate_top_k": [None, 49]}
    assert (dest / "model.safetensors").is_symlink()
    assert (dest / "model.safetensors").resolve() == (source / "model.safetensors").resolve()
    assert json.loads((dest / "config.json").read_text()) == {
        "centroid_intermediate_top_k": 49,
        "model_type": "gemma4_assistant",
        "x": 1,
    }
    assert json.loads((source / "config.json").read_text())["x"] == 1, "the source is untouched"


def test_centroid_top_k_needs_a_drafter_folder_and_is_no_speculative_config_field() -> None:
    with pytest.raises(ConfigError, match="SPECULATIVE_CONFIG"):
        serve_args({"CENTROID_TOP_K": 49})
    with pytest.raises(ConfigError, match="mounted MTP drafter") as info:
        serve_args({"CENTROID_TOP_K": 49, "SPECULATIVE_CONFIG": {"method": "mtp"}})
    assert info.value.key == "CENTROID_TOP_K"
    with pytest.raises(ConfigError, match="not a vLLM speculative-config field"):
        serve_args(
            {"SPECULATIVE_CONFIG": {"method": "mtp", "centroid_intermediate_top_k": 32}},
        )


def test_the_mounted_drafter_serves_an_mtp_config_that_names_none() -> None:
    config = {"SPECULATIVE_CONFIG": {"method": "mtp", "num_speculative_tokens": 7}}
    spec = json.loads(option(serve_args(config, drafter="/drafter"), "--speculative-config"))
    assert spec["model"] == "/drafter"
    ngram = {"SPECULATIVE_CONFIG": {"method": "ngram", "num_speculative_tokens": 3}}
    assert "model" not in json.loads(
        option(serve_args(ngram, drafter="/drafter"), "--speculative-config")
    )


def test_drafter_repository_is_rewritten_to_its_mounted_path() -> None:
    config = {"SPECULATIVE_CONFIG": {"method": "mtp", "model": "google/gemma-4-E4B-it-assistant"}}
    argv = serve_args(config, model_paths={"google/gemma-4-E4B-it-assistant": "/models/assistant"})
    assert json.loads(option(argv, "--speculative-config"))["model"] == "/models/assistant"
    assert "google/gemma-4-E4B-it-assistant" in option(serve_args(config), "--speculative-config")


def test_served_model_name_precedence() -> None:
    assert option(serve_args({}), "--served-model-name") == "/model"
    assert option(serve_args({"MODEL": "org/m"}), "--served-model-name") == "org/m"
    assert option(serve_args({"MODEL": "org/m"}, served_model_name="x"), "--served-model-name") == (
        "x"
    )
    config = {"MODEL": "org/m", "SERVED_MODEL_NAME": "mine"}
    assert option(serve_args(config, served_model_name="x"), "--served-model-name") == "mine"


def test_model_knob_is_recorded_never_served() -> None:
    argv = serve_args({"MODEL": "someone/else"}, model_path="/model")
    assert argv[: len(COMMAND) + 2] == [*COMMAND, "--model", "/model"]
    assert argv.count("--model") == 1
    assert argv.count("someone/else") == 1
    assert option(argv, "--served-model-name") == "someone/else"


@pytest.mark.parametrize(("device", "wanted"), [("cuda", "auto"), ("cuda", "cuda"), ("cpu", "cpu")])
def test_device_naming_the_images_build_adds_nothing(device: str, wanted: str) -> None:
    assert serve_args({"DEVICE": wanted}, device=device) == serve_args({}, device=device)


@pytest.mark.parametrize(("device", "wanted"), [("cuda", "cpu"), ("cpu", "cuda")])
def test_device_of_another_build_is_refused(device: str, wanted: str) -> None:
    with pytest.raises(ConfigError, match=f"vLLM's {device} build") as info:
        serve_args({"DEVICE": wanted}, device=device)
    assert info.value.key == "DEVICE"


# --- order, environment, launcher knobs -------------------------------------------------


def test_flags_come_out_in_a_fixed_order_whatever_the_key_order() -> None:
    config = {k: v for k, v in SAMPLES.items() if k != "DEVICE"}
    config["SPECULATIVE_CONFIG"] = {**config["SPECULATIVE_CONFIG"], "model": "/drafter"}
    expected = serve_args(config)
    keys = list(config)
    for seed in range(5):
        random.Random(seed).shuffle(keys)
        assert serve_args({k: config[k] for k in keys}) == expected
    flags = [a for a in expected if a.startswith("--")]
    assert flags == [
        "--model", "--served-model-name", "--host", "--port", "--dtype", "--quantization",
        "--kv-cache-dtype", "--max-model-len", "--gpu-memory-utilization",
        "--max-num-batched-tokens", "--max-num-seqs", "--no-enable-prefix-caching",
        "--enable-chunked-prefill", "--enforce-eager", "--max-logprobs", "--logprobs-mode",
        "--seed", "--hf-overrides", "--speculative-config", "--compilation-config",
        "--limit-mm-per-prompt", "--language-model-only",
    ]  # fmt: skip


def test_free_keys_become_environment_never_flags() -> None:
    config = {"VLLM_USE_FLASHINFER_SAMPLER": 0, "MY_FLAG": True, "NOTE": "a b", "RATIO": 0.5}
    argv = serve_args(config)
    assert argv == serve_args({})
    assert build_env(config) == {
        "MY_FLAG": "1",
        "NOTE": "a b",
        "RATIO": "0.5",
        "VLLM_USE_FLASHINFER_SAMPLER": "0",
    }
    assert list(build_env(config)) == sorted(build_env(config))


def test_attention_backend_is_an_environment_variable() -> None:
    assert build_env({"ATTENTION_BACKEND": "FLASHINFER"}) == {
        "VLLM_ATTENTION_BACKEND": "FLASHINFER"
    }
    assert "FLASHINFER" not in serve_args({"ATTENTION_BACKEND": "FLASHINFER"})
    with pytest.raises(ConfigError, match="contradicts"):
        build_env({"ATTENTION_BACKEND": "FLASHINFER", "VLLM_ATTENTION_BACKEND": "FLASH_ATTN"})


def test_free_keys_must_be_environment_names_with_scalar_values() -> None:
    with pytest.raises(ConfigError):
        build_env({"lower": "x"})
    with pytest.raises(ConfigError):
        build_env({"LIST": [1, 2]})


def test_launcher_settings_defaults_and_values() -> None:
    default = launcher_settings({})
    assert not default.warmup_bridge and not default.precache_bench
    assert default.warmup_num_prompts > 0 and default.warmup_max_tokens > 0
    published = launcher_settings(PUBLISHED)
    assert published.warmup_bridge and published.warmup_num_prompts == 64
    assert not published.precache_bench


def test_published_winning_config_gives_the_exact_command() -> None:
    argv = build_serve_args(
        PUBLISHED,
        model_path="/model",
        served_model_name="gemma",
        port=8001,
        host="127.0.0.1",
        drafter="/drafter",
        drafter_dir="/tmp/podium-drafter",
    )
    assert argv == [
        *COMMAND, "--model", "/model",
        "--served-model-name", "gemma",
        "--host", "127.0.0.1", "--port", "8001",
        "--max-model-len", "4096",
        "--gpu-memory-utilization", "0.9",
        "--hf-overrides", '{"text_config":{"sliding_window":188}}',
        "--speculative-config",
        '{"method":"mtp","model":"/tmp/podium-drafter","num_speculative_tokens":7}',
    ]  # fmt: skip
    assert drafter_copy(PUBLISHED, drafter="/drafter", drafter_dir="/tmp/podium-drafter") == (
        DrafterCopy("/drafter", "/tmp/podium-drafter", {"centroid_intermediate_top_k": 49})
    )
    assert build_env(PUBLISHED) == {}


def test_synthetic_prompts_are_deterministic_and_varied() -> None:
    prompts = synthetic_prompts(8)
    assert prompts == synthetic_prompts(8)
    assert len({len(p.split()) for p in prompts}) == 8


# --- the command line -------------------------------------------------------------------


def run_launcher(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engines.vllm_launcher", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        timeout=60,
        check=False,
    )


def test_dry_run_prints_the_exact_command(tmp_path: Path) -> None:
    path = tmp_path / "engine-config.json"
    path.write_text(json.dumps({**PUBLISHED, "ATTENTION_BACKEND": "FLASH_ATTN", "X_NOTE": "a b"}))
    done = run_launcher(
        str(path), "--dry-run", "--served-model-name", "gemma", "--drafter", "/drafter",
        "--vllm", f"python3 -m {SERVER_MODULE}",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"VLLM_ATTENTION_BACKEND=FLASH_ATTN X_NOTE='a b' python3 -m {SERVER_MODULE} "
        "--model /model --served-model-name gemma --host 127.0.0.1 --port 8001 "
        "--max-model-len 4096 --gpu-memory-utilization 0.9 "
        '--hf-overrides \'{"text_config":{"sliding_window":188}}\' '
        "--speculative-config "
        '\'{"method":"mtp","model":"/tmp/podium-drafter","num_speculative_tokens":7}\''
    )


def test_dry_run_starts_this_interpreters_vllm_by_default(tmp_path: Path) -> None:
    path = tmp_path / "engine-config.json"
    path.write_text("{}")
    done = run_launcher(str(path), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{sys.executable} -m {SERVER_MODULE} --model /model ")


def test_the_image_build_decides_which_device_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "engine-config.json"
    path.write_text(json.dumps({"DEVICE": "cpu"}))
    assert run_launcher(str(path), "--dry-run", env={"PODIUM_VLLM_DEVICE": "cpu"}).returncode == 0
    refused = run_launcher(str(path), "--dry-run", env={"PODIUM_VLLM_DEVICE": "cuda"})
    assert refused.returncode == 2 and "DEVICE" in refused.stderr


def test_unusable_config_exits_2_naming_the_knob(tmp_path: Path) -> None:
    path = tmp_path / "engine-config.json"
    path.write_text(json.dumps({"DEVICE": "cpu"}))
    done = run_launcher(str(path), "--dry-run")
    assert done.returncode == 2
    assert "DEVICE" in done.stderr


def test_launcher_reports_a_missing_vllm(tmp_path: Path) -> None:
    config_path = tmp_path / "engine-config.json"
    config_path.write_text("{}")
    done = run_launcher(
        str(config_path), "--port", "18999", "--vllm", str(tmp_path / "no-such-vllm")
    )
    assert done.returncode == 127
    assert "cannot start" in done.stderr
