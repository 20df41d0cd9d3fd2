"""The model an entry declares it serves, as far as the verifier's reference can run it.

The rules allow lossy levers, bounded by the quality rule: a shorter sliding window, a
smaller dtype, weight quantisation, a smaller KV-cache dtype. Where the reference engine
(podium's baseline engine on the pinned weights) can reproduce a declared change
exactly, it runs the model as declared, and its per-token checks keep the tolerance of
honest numerics: a windowed entry is then judged against the windowed model, not the
unmodified one. What it cannot reproduce (quantisation, the KV-cache dtype, a custom
engine's approximations) is judged against the quality budget instead
(``verifier.checks.reference``). The report names both lists.

Read from the frozen engine config the verifier itself opened (intake's manifest),
never from anything the engine says at run time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: the knobs whose effect on the model the reference reproduces
REPRODUCED = ("SLIDING_WINDOW", "DTYPE")
#: lossy knobs the reference cannot reproduce: judged against the quality budget
BUDGETED = ("QUANTIZATION", "KV_CACHE_DTYPE", "CALCULATE_KV_SCALES")
#: the budgeted knobs that change only what decoding reads back (a KV cache): with one
#: declared, an honest decode may differ from the engine's own scoring by what it loses
KV_CACHE = ("KV_CACHE_DTYPE", "CALCULATE_KV_SCALES")
_DTYPES = {"float32", "bfloat16", "float16"}
_DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}


@dataclass(frozen=True)
class DeclaredModel:
    """How the reference runs: the window and dtype, and which declared knobs it applied."""

    dtype: str
    sliding_window: int | None = None
    applied: dict[str, Any] = field(default_factory=dict)
    #: declared lossy knobs the reference does not reproduce (judged by the budget)
    budgeted: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dtype": self.dtype,
            "sliding_window": self.sliding_window,
            "applied": dict(self.applied),
            "budgeted": dict(self.budgeted),
        }

    def engine_kwargs(self) -> dict[str, Any]:
        """The ``BaselineEngine`` arguments for this model, besides its dtype."""
        return {} if self.sliding_window is None else {"sliding_window": self.sliding_window}

    def engine_env(self) -> dict[str, str]:
        """The same as the baseline engine's environment knobs (the dtype is the runner's
        ``--dtype``)."""
        return {} if self.sliding_window is None else {"SLIDING_WINDOW": str(self.sliding_window)}


def _overrides(config: Mapping[str, Any]) -> dict[str, Any]:
    value = config.get("HF_OVERRIDES")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _window(config: Mapping[str, Any]) -> tuple[int | None, str | None]:
    """The declared window and the knob it came from (SLIDING_WINDOW, else HF_OVERRIDES)."""
    if config.get("SLIDING_WINDOW") is not None:
        return int(config["SLIDING_WINDOW"]), "SLIDING_WINDOW"
    overrides = _overrides(config)
    text = overrides.get("text_config")
    for where, holder in (("HF_OVERRIDES.text_config", text), ("HF_OVERRIDES", overrides)):
        if isinstance(holder, dict) and holder.get("sliding_window") is not None:
            return int(holder["sliding_window"]), f"{where}.sliding_window"
    return None, None


def declared_model(config: Mapping[str, Any] | None, default_dtype: str) -> DeclaredModel:
    """What of ``config`` (a frozen engine config) the reference runs, and what it budgets.

    ``default_dtype`` is the challenge's reference dtype; a declared ``DTYPE`` of float32,
    bfloat16 or float16 replaces it (``auto`` is the checkpoint's own: nothing changes).
    """
    config = config or {}
    applied: dict[str, Any] = {}
    window, source = _window(config)
    if window is not None and source is not None:
        applied[source] = window
    dtype = default_dtype
    raw = config.get("DTYPE")
    if isinstance(raw, str):
        name = _DTYPE_ALIASES.get(raw.lower(), raw.lower())
        if name in _DTYPES and name != default_dtype:
            dtype = name
            applied["DTYPE"] = raw
    budgeted = {
        key: config[key] for key in BUDGETED if config.get(key) not in (None, "", "auto", False, 0)
    }
    return DeclaredModel(dtype=dtype, sliding_window=window, applied=applied, budgeted=budgeted)
