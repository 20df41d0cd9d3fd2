"""The knobs of a frozen engine config that the baseline engine acts on.

A submission's ``engine-config.json`` holds every knob the participant set; the
baseline engine reads the few in ``KNOBS`` and nothing else (``podium submission
validate`` says which of a config's knobs it would ignore).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

#: The knobs of an engine config that the baseline engine acts on, and what each sets.
#: Every other knob (vLLM's cache, memory or speculative settings ...) does nothing here.
KNOBS: Final[Mapping[str, str]] = {
    "DEVICE": "--device: cpu, cuda, or auto (cuda when torch sees a GPU, else cpu)",
    "DTYPE": "--dtype: float32, bfloat16, float16, or auto (the checkpoint's own dtype)",
    "MAX_MODEL_LEN": "--max-model-len: the longest prompt plus output",
    "SLIDING_WINDOW": "--sliding-window: the local attention window of the sliding layers",
    "QUANTIZATION": "--quantization: int8 or int4, weights rounded per tensor at load",
    "SERVED_MODEL_NAME": "--served-model-name: the name at /v1/models",
}


def read_config(path: str) -> dict[str, str]:
    """The baseline's knobs of a frozen engine config, as environment-style strings."""
    try:
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"cannot read the engine config {path}: {exc}") from None
    if not isinstance(config, dict):
        raise SystemExit(f"the engine config {path} is not a JSON object")
    return {key: _as_text(config[key]) for key in KNOBS if config.get(key) is not None}


def _as_text(value: Any) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)
