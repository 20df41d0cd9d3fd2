"""The model the verifier's reference runs, and what of an entry's declaration counts.

The rules allow lossy levers, bounded by the quality rule: a shorter sliding window, a
smaller dtype, weight quantisation, a smaller KV-cache dtype. A declaration costs the
engine nothing, so no bound may grow with one (``docs/measurement.md``, "Nothing can be
bought"). The challenge's ``reference_decode.rule`` says which model the timed answers
are judged against:

- ``budget`` (the default): the **pinned model itself**, whatever the entry declares.
  The decode may be as lossy as an honest model at the PPL cap, no more, and that
  allowance comes from the spec alone (``verifier.checks.budget``), so a declared
  window, dtype or quantisation changes neither the reference nor any bound. The
  declared lossy knobs are recorded (``declared``), for the reader.
- ``identity``: the **declared model**, as far as the reference reproduces it exactly
  (the window, the dtype: ``REPRODUCED``), and the decode must be its greedy decode
  within the noise of honest numerics (no budget at all). What the reference cannot
  reproduce (quantisation, a KV-cache dtype) is listed in ``budgeted`` and buys nothing.

Either way, a lever the reference cannot reproduce counts only where podium itself made
it true (``in_effect``: the pinned vLLM image, rebuilt by the verifier, running podium's
own launcher on the frozen config, ``verifier.checks.vllm_image.confirmed_levers``), and
only for the one allowance such a lever needs (a KV cache read back by decoding but not
by scoring: ``verifier.checks.same_path``). The engine's log, ``/version``, ``/metrics``
and answers never count: they are the engine's word.

Read from the frozen engine config the verifier itself opened (intake's manifest),
never from anything the engine says at run time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: the decode rules a challenge may choose (``integrity.reference_decode.rule``)
RULES = ("budget", "identity")
#: the knobs whose effect on the model the reference reproduces (under ``identity``)
REPRODUCED = ("SLIDING_WINDOW", "DTYPE")
#: weight roundings podium's baseline engine makes at load, which the reference (the same
#: engine) reproduces exactly for an entry on that engine (under ``identity``)
BASELINE_QUANTIZATIONS = ("int8", "int4")
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
    #: the baseline engine's weight rounding, reproduced (``BASELINE_QUANTIZATIONS``)
    quantization: str | None = None
    applied: dict[str, Any] = field(default_factory=dict)
    #: declared lossy knobs the reference does not reproduce (they buy no allowance)
    budgeted: dict[str, Any] = field(default_factory=dict)
    rule: str = "identity"
    #: declared lossy knobs podium itself made true (the pinned vLLM, rebuilt by the
    #: verifier, started by podium's launcher): ``verifier.checks.vllm_image``
    in_effect: dict[str, Any] = field(default_factory=dict)
    #: declared KV-cache knobs podium could not confirm, and why: they buy nothing
    unconfirmed: dict[str, str] = field(default_factory=dict)

    @property
    def reproduces(self) -> bool:
        """The reference runs exactly what the entry declared: nothing left unreproduced."""
        return not self.budgeted

    def kv_cache_in_effect(self) -> bool:
        """A KV-cache change the reference cannot reproduce, which podium made true."""
        return bool(set(self.in_effect) & set(KV_CACHE))

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "dtype": self.dtype,
            "sliding_window": self.sliding_window,
            "quantization": self.quantization,
            "applied": dict(self.applied),
            "budgeted": dict(self.budgeted),
            "in_effect": dict(self.in_effect),
            "unconfirmed": dict(self.unconfirmed),
        }

    def engine_kwargs(self) -> dict[str, Any]:
        """The ``BaselineEngine`` arguments for this model, besides its dtype."""
        out: dict[str, Any] = {}
        if self.sliding_window is not None:
            out["sliding_window"] = self.sliding_window
        if self.quantization is not None:
            out["quantization"] = self.quantization
        return out

    def engine_env(self) -> dict[str, str]:
        """The same as the baseline engine's environment knobs (the dtype is the runner's
        ``--dtype``)."""
        out: dict[str, str] = {}
        if self.sliding_window is not None:
            out["SLIDING_WINDOW"] = str(self.sliding_window)
        if self.quantization is not None:
            out["QUANTIZATION"] = self.quantization
        return out


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


def declared_model(
    config: Mapping[str, Any] | None,
    default_dtype: str,
    rule: str = "identity",
    engine_kind: str | None = None,
) -> DeclaredModel:
    """What of ``config`` (a frozen engine config) the reference runs under ``rule``.

    ``default_dtype`` is the challenge's reference dtype. Under ``identity`` a declared
    window is applied, and a declared ``DTYPE`` of float32, bfloat16 or float16 replaces
    the dtype (``auto`` is the checkpoint's own: nothing changes), and for an entry on the
    baseline engine (``engine_kind``) a declared int8 or int4 rounding of the weights is
    reproduced too, the reference being that engine. Under ``budget`` the
    reference runs the pinned model as the spec gives it, and every declared lossy knob,
    the window and dtype included, is only listed (``budgeted``).
    """
    if rule not in RULES:
        raise ValueError(f"unknown reference_decode rule {rule!r}: one of {', '.join(RULES)}")
    config = config or {}
    if rule == "budget":
        reproduced = declared_model(config, default_dtype, "identity", engine_kind)
        listed = {**reproduced.applied, **reproduced.budgeted}
        return DeclaredModel(dtype=default_dtype, budgeted=listed, rule=rule)
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
    quantization = None
    raw_q = budgeted.get("QUANTIZATION")
    if engine_kind == "baseline" and isinstance(raw_q, str) and raw_q in BASELINE_QUANTIZATIONS:
        quantization = raw_q
        applied["QUANTIZATION"] = budgeted.pop("QUANTIZATION")
    return DeclaredModel(
        dtype=dtype,
        sliding_window=window,
        quantization=quantization,
        applied=applied,
        budgeted=budgeted,
        rule=rule,
    )
