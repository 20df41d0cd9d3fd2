"""``engine.runtime-mismatch``: what the vLLM server really ran with, against what was frozen.

The evidence is ``verifier.harness.engine_runtime.Observation``: what vLLM itself said while it ran
(``/version``, ``/v1/models``, the ``non-default args`` line of its start-up log,
``/metrics``), read after the timed work. It is the engine's own text (a launcher is the
participant's code and can log anything), so a finding shows a string of it only through
``verifier.harness.engine_runtime.shown``; the frozen config, the base image's vLLM version and the
harness's own token count are the verifier's.

A frozen knob that did not take effect, or a setting no frozen knob explains, is an
``engine.runtime-mismatch`` error; a setting the challenge forbids is also reported under
that rule's own id. Missing evidence (a server that logs nothing, no ``/metrics``) is no
finding but is listed in the record (``unobserved``): what an engine says about itself is a
cheap first filter, never the proof, and the timed work is judged by the other checks.

Pure: it reads the observation and sends nothing. The id raises findings only (no check
result); the pipeline adds them to the run's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from schemas.challenge import ChallengeSpec
from schemas.check_ids import ENGINE_RUNTIME_MISMATCH
from schemas.engine_config import rule_fires
from schemas.findings import Finding
from verifier.harness.engine_runtime import (
    KNOB_ARGS,
    LAUNCHER_ARGS,
    VLLM_CHOICES,
    VLLM_DEFAULTS,
    Observation,
    arg_matches,
    expected_args,
    known_arg,
    shown,
    shown_version,
    sliding_window,
)

CHECK_ID = ENGINE_RUNTIME_MISMATCH

#: Knobs folded into another knob's argument.
MERGED: dict[str, str] = {"SLIDING_WINDOW": "hf_overrides"}


def _arg_name(arg: str) -> str:
    return arg if known_arg(arg) else f"<an argument of {len(arg)} characters>"


def _observed_knobs(args: Mapping[str, Any]) -> dict[str, Any]:
    """The knobs that the observed arguments amount to (for the challenge's forbidden rules)."""
    by_arg = {arg: knob for knob, arg in KNOB_ARGS.items()}
    out = {by_arg[arg]: value for arg, value in args.items() if arg in by_arg}
    if isinstance(args.get("hf_overrides"), Mapping):
        window = sliding_window(args["hf_overrides"])
        if window is not None:
            out["SLIDING_WINDOW"] = window
    return out


# --- the comparison (pure) ----------------------------------------------------------------


def _mismatch(message: str, hint: str | None = None) -> Finding:
    return Finding(CHECK_ID, "error", message, hint=hint, where="runtime")


def compare_args(
    frozen: Mapping[str, Any], seen: Mapping[str, Any], spec: ChallengeSpec | None = None
) -> list[Finding]:
    """Findings for one parsed non-default args line against the frozen config."""
    findings: list[Finding] = []
    expected = expected_args(frozen)
    for arg, want in expected.items():
        if arg in seen:
            if not arg_matches(arg, frozen, want, seen[arg]):
                knob = next(k for k, a in KNOB_ARGS.items() if a == arg)
                findings.append(
                    _mismatch(
                        f"{knob} was frozen as {json.dumps(frozen.get(knob))} but vLLM ran with "
                        f"{arg}={shown(seen[arg], choices=VLLM_CHOICES.get(arg, frozenset()))}",
                        hint="the launcher must pass the frozen config unchanged",
                    )
                )
        elif arg not in LAUNCHER_ARGS and want != VLLM_DEFAULTS.get(arg, object()):
            knob = next(k for k, a in KNOB_ARGS.items() if a == arg)
            findings.append(
                _mismatch(
                    f"{knob}={json.dumps(frozen.get(knob))} was frozen but did not take effect: "
                    f"vLLM ran with its default {arg}",
                    hint="the launcher must pass every frozen knob to vLLM",
                )
            )
    explained = set(expected) | {MERGED[k] for k in MERGED if k in frozen} | LAUNCHER_ARGS
    for arg in sorted(set(seen) - explained):
        findings.append(
            _mismatch(
                f"vLLM ran with {_arg_name(arg)}="
                f"{shown(seen[arg], choices=VLLM_CHOICES.get(arg, frozenset()))}, "
                "which no frozen knob sets",
                hint="every engine setting must be in the frozen engine config",
            )
        )
    if spec is not None:
        observed = _observed_knobs(seen)
        for rule in spec.engine.forbidden:
            if rule_fires(rule, observed) and not rule_fires(rule, dict(frozen)):
                findings.append(
                    Finding(
                        rule.id,
                        "error",
                        f"{rule.message} (seen at run time in vLLM's arguments)",
                        hint=rule.hint,
                        where="runtime",
                    )
                )
    return findings


def compare(
    obs: Observation,
    frozen: Mapping[str, Any],
    spec: ChallengeSpec | None = None,
    *,
    harness_generated_tokens: int | None = None,
    expected_version: str | None = None,
) -> list[Finding]:
    """Every finding of the runtime comparison; none for an honest server."""
    findings: list[Finding] = []
    distinct = {json.dumps(a, sort_keys=True, default=str) for a in obs.non_default_args}
    if len(distinct) > 1:
        findings.append(
            _mismatch(
                f"the log holds {len(distinct)} different 'non-default args' lines: "
                "one server, one set of arguments"
            )
        )
    for seen in obs.non_default_args:
        findings += compare_args(frozen, seen, spec)
    if obs.models:
        length = obs.models[0].get("max_model_len")
        if "MAX_MODEL_LEN" in frozen and length is not None and length != frozen["MAX_MODEL_LEN"]:
            findings.append(
                _mismatch(
                    f"MAX_MODEL_LEN was frozen as {frozen['MAX_MODEL_LEN']} but /v1/models "
                    f"reports max_model_len {shown(length)}"
                )
            )
    if expected_version and obs.version and obs.version != expected_version:
        findings.append(
            _mismatch(
                f"/version answers vLLM {shown_version(obs.version)}, but the base image holds "
                f"{expected_version}"
            )
        )
    generated = (obs.counters or {}).get("generation_tokens")
    expected = harness_generated_tokens
    if generated is not None and expected is not None and generated < expected:
        findings.append(
            _mismatch(
                f"the harness received {expected} generated tokens in the timed trials, but "
                f"vLLM counted only {generated:.0f} generated tokens in its whole run: "
                "answers came from somewhere other than vLLM",
                hint="every answer must be generated by the vLLM server being measured",
            )
        )
    return findings
