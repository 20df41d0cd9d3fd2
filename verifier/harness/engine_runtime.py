"""What the vLLM server really ran with: the evidence ``engine.runtime-mismatch`` judges.

The manifest freezes an engine config, but what turns it into vLLM arguments (the
launcher) travels in the bundle, so it is the participant's code. This module reads back
what vLLM itself says while it runs, for ``verifier.checks.runtime_mismatch`` to compare with the
frozen config:

- ``/version``: the vLLM version that answers, against the one the base image names;
- ``/v1/models``: the served model's ``max_model_len``;
- the ``non-default args: {...}`` line vLLM logs at start-up (every argument that differs
  from vLLM's own default, as vLLM parsed it);
- ``/metrics``: vLLM's own generated-token counter, which must have counted at least the
  tokens the harness received in the timed trials (an answer vLLM never generated came
  from somewhere else), and the speculative-decoding counters (the acceptance rate).

Everything here is the engine's own text, read after the timed work (a launcher is the
participant's code and can log anything), so the record and the findings show a string
only where it equals what the verifier expected from the frozen config or the base image,
or has a closed form (a version number, an argument podium knows); any other value is
shown as its size (``shown``): the organizer reads it in their log, the participant never
(``docs/measurement.md``, "What leaves the sandbox").

``observe`` does the I/O; everything else is pure: parse, then ``record`` (the report's
``runtime`` member, with what could not be observed); the comparison with the frozen
config (``expected_args``, the verifier's own reading of the knobs) is
``verifier.checks.runtime_mismatch.compare``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from verifier.harness import netns
from verifier.harness.vllm_output import parse_counters, parse_non_default_args

#: Each knob that becomes one vLLM argument: the argument's name in vLLM's parser (the
#: ``dest`` of its option, as the non-default args line spells it). This is the verifier's
#: own reading of the knobs, kept apart from the launcher in the bundle on purpose.
KNOB_ARGS: dict[str, str] = {
    "SERVED_MODEL_NAME": "served_model_name",
    "MAX_MODEL_LEN": "max_model_len",
    "GPU_MEMORY_UTILIZATION": "gpu_memory_utilization",
    "MAX_NUM_BATCHED_TOKENS": "max_num_batched_tokens",
    "MAX_NUM_SEQS": "max_num_seqs",
    "DTYPE": "dtype",
    "QUANTIZATION": "quantization",
    "KV_CACHE_DTYPE": "kv_cache_dtype",
    "ENFORCE_EAGER": "enforce_eager",
    "ENABLE_PREFIX_CACHING": "enable_prefix_caching",
    "ENABLE_CHUNKED_PREFILL": "enable_chunked_prefill",
    "MAX_LOGPROBS": "max_logprobs",
    "LOGPROBS_MODE": "logprobs_mode",
    "LIMIT_MM_PER_PROMPT": "limit_mm_per_prompt",
    "LANGUAGE_MODEL_ONLY": "language_model_only",
    "COMPILATION_CONFIG": "compilation_config",
    "SEED": "seed",
    "HF_OVERRIDES": "hf_overrides",
    "SPECULATIVE_CONFIG": "speculative_config",
}
#: vLLM 0.32's defaults for these arguments (``vars(make_arg_parser(...).parse_args([]))``;
#: a test in the vLLM image keeps this table honest). A frozen value equal to its default
#: does not show in the non-default args, which is then no mismatch.
VLLM_DEFAULTS: dict[str, Any] = {
    "max_model_len": None,
    "gpu_memory_utilization": 0.92,
    "max_num_batched_tokens": None,
    "max_num_seqs": None,
    "dtype": "auto",
    "quantization": None,
    "kv_cache_dtype": "auto",
    "enforce_eager": False,
    "enable_prefix_caching": None,
    "enable_chunked_prefill": None,
    "max_logprobs": 20,
    "logprobs_mode": "raw_logprobs",
    "limit_mm_per_prompt": {},
    "language_model_only": False,
    "seed": 0,
    "hf_overrides": {},
    "speculative_config": None,
}
#: Arguments the launcher sets for the verifier's sandbox, never from a knob.
LAUNCHER_ARGS = frozenset({"model", "host", "port", "served_model_name", "model_tag"})
#: Arguments that are on/off switches (knobs given as true/false/0/1).
FLAG_ARGS = frozenset(
    {"enforce_eager", "enable_prefix_caching", "enable_chunked_prefill", "language_model_only"}
)
#: Values the non-default args line shows as an object's repr, not comparable as data.
OPAQUE_ARGS = frozenset({"compilation_config"})


@dataclass(frozen=True)
class Observation:
    """What the running server said about itself; ``None`` where it said nothing."""

    version: str | None = None
    models: list[dict[str, Any]] | None = None
    non_default_args: list[dict[str, Any]] = field(default_factory=list)
    counters: dict[str, float] | None = None
    errors: dict[str, str] = field(default_factory=dict)


# --- what of the engine's text a report may show (pure) -----------------------------------

_ABSENT = object()
_VERSION = re.compile(r"^[0-9]{1,3}(\.[0-9]{1,4}){1,3}$")


#: vLLM arguments whose values come from a closed list of vLLM's own words: such a value
#: carries no text of the engine's choosing (a few bits at most), so a report shows it
VLLM_CHOICES: dict[str, frozenset[str]] = {
    "logprobs_mode": frozenset(
        {"raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits"}
    ),
    "kv_cache_dtype": frozenset(
        {"auto", "bfloat16", "float16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc"}
    ),
    "dtype": frozenset({"auto", "half", "float16", "bfloat16", "float", "float32"}),
}


def shown(value: Any, expected: Any = _ABSENT, choices: frozenset[str] = frozenset()) -> str:
    """``value`` as a report may show it: a number, a flag, one of ``choices`` (vLLM's own
    words), or what the verifier expected, as it is; any other value as its size only (it
    is the engine's text)."""
    if value is None or isinstance(value, bool | float):
        return repr(value)
    if isinstance(value, int) and abs(value) < 1 << 53:
        return repr(value)
    if expected is not _ABSENT and value == expected:
        return repr(value)
    if isinstance(value, str) and value in choices:
        return repr(value)
    size = len(json.dumps(value, default=str))
    return f"<a value of {size} characters, in the organizer's log>"


def known_arg(arg: str) -> bool:
    return arg in VLLM_DEFAULTS or arg in LAUNCHER_ARGS or arg in OPAQUE_ARGS


def blind_args(seen: Mapping[str, Any], frozen: Mapping[str, Any]) -> dict[str, Any]:
    """A non-default args line as a report may hold it: known argument names, and values
    that are numbers, flags or what the frozen config asked for; others by size only."""
    expected = expected_args(frozen)
    out: dict[str, Any] = {}
    for i, (arg, value) in enumerate(seen.items()):
        name = arg if known_arg(arg) else f"<argument {i}: {len(arg)} characters>"
        if value is None or isinstance(value, bool | int | float):
            out[name] = value if not isinstance(value, int) or abs(value) < 1 << 53 else None
        elif _vouched(arg, value, frozen, expected):
            out[name] = value
        else:
            out[name] = shown(value)
    return out


def _vouched(arg: str, value: Any, frozen: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """What the frozen config asked for, or one of vLLM's own words for ``arg``."""
    if arg in expected and arg_matches(arg, frozen, expected[arg], value):
        return True
    return isinstance(value, str) and value in VLLM_CHOICES.get(arg, frozenset())


# --- what the frozen config should look like at run time (pure) ----------------------------


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true")
    return bool(value)


def sliding_window(overrides: Mapping[str, Any]) -> Any:
    text = overrides.get("text_config")
    if isinstance(text, Mapping) and "sliding_window" in text:
        return text["sliding_window"]
    return overrides.get("sliding_window")


def _without_sliding_window(overrides: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in overrides.items() if k != "sliding_window"}
    text = out.get("text_config")
    if isinstance(text, Mapping):
        rest = {k: v for k, v in text.items() if k != "sliding_window"}
        if rest:
            out["text_config"] = rest
        else:
            out.pop("text_config")
    return out


def expected_args(config: Mapping[str, Any]) -> dict[str, Any]:
    """The vLLM arguments the frozen ``config`` must have produced, by argument name."""
    out: dict[str, Any] = {}
    for knob, arg in KNOB_ARGS.items():
        if knob not in config:
            continue
        value = config[knob]
        if arg in FLAG_ARGS:
            value = _flag(value)
        elif arg == "served_model_name":
            value = [value]
        out[arg] = value
    if "SLIDING_WINDOW" in config:  # merged into hf_overrides (where depends on the checkpoint)
        out["hf_overrides"] = {
            **(config.get("HF_OVERRIDES") or {}),
            "sliding_window": config["SLIDING_WINDOW"],
        }
    return out


def arg_matches(arg: str, frozen: Mapping[str, Any], expected: Any, seen: Any) -> bool:
    if arg in OPAQUE_ARGS:
        return True
    if arg == "hf_overrides":
        want_window = frozen.get("SLIDING_WINDOW")
        seen_map = seen if isinstance(seen, Mapping) else {}
        if want_window is not None and sliding_window(seen_map) != want_window:
            return False
        rest = _without_sliding_window(seen_map) if want_window is not None else dict(seen_map)
        return rest == _without_sliding_window(frozen.get("HF_OVERRIDES") or {})
    if arg == "speculative_config":
        if not isinstance(seen, Mapping) or not isinstance(expected, Mapping):
            return False
        # the drafter is served from wherever it was mounted (or copied): "model" may differ
        return {k: v for k, v in seen.items() if k != "model"} == {
            k: v for k, v in expected.items() if k not in ("model", "centroid_intermediate_top_k")
        }
    if isinstance(expected, float) or isinstance(seen, float):
        return isinstance(seen, int | float) and abs(float(seen) - float(expected)) < 1e-9
    return bool(seen == expected)


def unobserved_evidence(obs: Observation) -> dict[str, str]:
    """What could not be compared, and why: recorded in the report, never a finding."""
    out = dict(obs.errors)
    if not obs.non_default_args:
        out["non-default args"] = (
            "vLLM's start-up log has no readable 'non-default args' line (its INFO logging "
            "off?): the arguments it ran with were not compared with the frozen config"
        )
    if "generation_tokens" not in (obs.counters or {}):
        out["vllm:generation_tokens_total"] = (
            "absent from /metrics: vLLM's own token count was not compared with the harness's"
        )
    return out


def acceptance_rate(counters: Mapping[str, float] | None) -> float | None:
    """Accepted / drafted speculative tokens, or None without speculative decoding."""
    if not counters:
        return None
    drafted = counters.get("spec_decode_draft_tokens", 0.0)
    if drafted <= 0:
        return None
    return counters.get("spec_decode_accepted_tokens", 0.0) / drafted


def shown_version(version: str | None) -> str | None:
    if version is None or _VERSION.match(version):
        return version
    return shown(version)


def _served(model: Mapping[str, Any], served_model_name: str | None) -> dict[str, Any]:
    length = model.get("max_model_len")
    return {
        "id": model.get("id")
        if served_model_name is not None and model.get("id") == served_model_name
        else shown(model.get("id")),
        "max_model_len": length if isinstance(length, int) and abs(length) < 1 << 53 else None,
    }


def record(
    obs: Observation,
    *,
    harness_generated_tokens: int | None = None,
    frozen: Mapping[str, Any] | None = None,
    served_model_name: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """The report's ``runtime`` member: what was observed, and the numbers compared; the
    engine's strings only where they are what was expected (``shown``)."""
    args = obs.non_default_args[0] if obs.non_default_args else None
    out: dict[str, Any] = {
        "engine": "vllm",
        "version": shown_version(obs.version),
        "served_model": _served(obs.models[0], served_model_name) if obs.models else None,
        "non_default_args": blind_args(args, frozen or {}) if args is not None else None,
        "counters": obs.counters,
        "harness_generated_tokens": harness_generated_tokens,
        "speculative_acceptance_rate": acceptance_rate(obs.counters),
    }
    unobserved = unobserved_evidence(obs)
    if unobserved:
        out["unobserved"] = unobserved
    out.update(extra)
    return json.loads(json.dumps(out, default=str))


def base_image_record(pin: str, ref: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """Which base the engine ran on and where its pin came from, for the report."""
    kept = {
        k: v
        for k, v in sorted(labels.items())
        if k.startswith(("org.podium.", "org.opencontainers."))
    }
    if "@sha256:" in pin:
        repo = ref.split("@", 1)[0]
        source = f"registry digest of {repo} (RepoDigests of the image the organizer holds)"
    elif "org.podium.inputs-sha256" in labels:
        source = (
            "local image id of a base built on the verifier's machine by scripts/build-images.sh "
            f"(inputs sha256 {labels['org.podium.inputs-sha256'][:12]})"
        )
    else:
        source = "local image id"
    return {"ref": ref, "pin": pin, "pin_source": source, "labels": kept}


# --- the I/O --------------------------------------------------------------------------------


def image_labels(image_id: str | None) -> dict[str, str]:
    """The labels of the rebuilt engine image (it inherits its base's); {} when unreadable."""
    if not image_id:
        return {}
    try:
        from podium import dockerx

        return dict(dockerx.image_info(dockerx.connect(), image_id).get("labels") or {})
    except Exception:  # no Docker engine here (a remote runner): the labels are not evidence
        return {}


def observe(base_url: str, log: str, *, timeout_s: float = 10.0) -> Observation:
    """Ask the running server for ``/version``, ``/v1/models`` and ``/metrics``; read the log."""
    import httpx2

    url = urlsplit(base_url)
    jail = netns.namespace_of(url.hostname or "")
    if jail is not None:  # an engine in a jail: ask from inside its network namespace
        inside = url._replace(netloc=f"127.0.0.1:{url.port or 80}").geturl()
        return netns.call_in(jail, lambda: observe(inside, log, timeout_s=timeout_s))
    errors: dict[str, str] = {}
    version = models = counters = None
    with httpx2.Client(base_url=base_url, timeout=timeout_s, trust_env=False) as client:
        for path in ("/version", "/v1/models", "/metrics"):
            try:
                response = client.get(path)
                response.raise_for_status()
                if path == "/version":
                    version = str(response.json().get("version"))
                elif path == "/v1/models":
                    models = [
                        {"id": m.get("id"), "max_model_len": m.get("max_model_len")}
                        for m in response.json().get("data", [])
                    ]
                else:
                    counters = parse_counters(response.text)
            except httpx2.HTTPStatusError as exc:
                errors[path] = f"HTTP {exc.response.status_code}"
            except (httpx2.HTTPError, ValueError, AttributeError) as exc:  # no text of its own
                errors[path] = type(exc).__name__
    return Observation(
        version=version,
        models=models,
        non_default_args=parse_non_default_args(log),
        counters=counters,
        errors=errors,
    )
