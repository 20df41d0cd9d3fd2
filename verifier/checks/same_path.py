"""``integrity.same-path``: the engine's own scoring of its timed answers agrees with them.

An engine once switched a layer only when ``prompt_logprobs`` was asked, so the PPL
stage saw the full model while decoding ran a cheaper one. Probes placed among the
timed requests, in exactly the shape of PPL records (``verifier.harness.probes``), ask
the engine to score some of its own timed answers teacher-forced. Judged after the
engine has stopped, at each generated position:

- by the values it returned (never its ``rank`` field: ``ppl.rank-mismatch`` reports a
  rank that contradicts them), the generated token must be the engine's own top within
  ``tie_tolerance``;
- and the list must not leave out the reference model's top token (the verifier's view)
  where the reference puts the generated token a whole ``large_gap_nats`` below it: an
  engine that lists only what it generated, labelled as the top, does not pass by
  forging its own scoring.

The first fraction must be at least ``min_fraction``, and the mean self-gap (the engine's
own top minus its value of the token it generated) at most ``max_mean_self_gap_nats``:
honest numerics between a decode and a prefill kernel. Neither bound moves with anything
the engine reports or declares. Only a KV-cache change the reference cannot reproduce,
**made true by podium itself** (``DeclaredModel.in_effect``: the spec's pinned vLLM image,
rebuilt by the verifier, started by podium's own launcher byte for byte, which passes the
knob to vLLM, ``verifier.checks.vllm_image``; a declaration, a log line, ``/version`` or
``/metrics`` buys nothing), makes decoding (which
reads the cache back) and scoring (which computes most of it afresh) differ by more: then
the fraction may be lower by ``large_share_factor * B`` and the self-gap higher by
``self_gap_factor * B``, with ``B`` the challenge's quality budget. The share of positions
that leave the reference's top out may be the decode's own large-gap allowance
(``verifier.checks.budget``), with room for the sampling noise of a count over a few
probes (``verifier.checks.tails``). This is a cheap first filter,
not the proof: an engine that recognises the probes could answer them honestly, and the
proof of honest decoding is ``integrity.reference-decode`` on the timed answers
themselves. Without a reference engine (a self-check run without one) only the first
condition is judged, and the summary says so.

Inputs and who wrote them: the probes' answers and the engine's scoring of them (the
engine); the reference's view of the same positions (the verifier's reference); the
bounds (the spec); whether a KV-cache lever widens them (the verifier's own evidence of
the image it built, above).
"""

from __future__ import annotations

import math
from typing import Any

from schemas.check_ids import INTEGRITY_SAME_PATH
from verifier.checks.base import (
    CheckContext,
    CheckOutcome,
    disabled,
    enabled,
    judged,
    percent,
    skipped,
)
from verifier.checks.budget import allowance
from verifier.checks.tails import left_out_allowance
from verifier.evidence import Position, ReferenceEvidence, SamePathProbe
from verifier.evidence.parse import listed_values

CHECK_ID = INTEGRITY_SAME_PATH


def self_top(entry: Any, token: int, tolerance: float) -> bool:
    """By the listed values, is ``token`` the engine's top (within ``tolerance``)?"""
    values = listed_values(entry)
    if token not in values:
        return False
    return values[token] >= max(values.values()) - tolerance


def lists_reference_top(entry: Any, ref: Position, ref_tolerance: float) -> bool:
    if ref.gap <= ref_tolerance:
        return True  # the reference agrees with the generated token: nothing is left out
    return ref.top_token in listed_values(entry)


#: the self-gap of a position whose generated token the engine does not list (nats)
UNLISTED_GAP = 10.0


def self_gap(entry: Any, token: int) -> float:
    """The engine's own top logprob minus its logprob of ``token`` (>= 0, nats), by the
    values it returned; ``UNLISTED_GAP`` when it does not list the token."""
    values = listed_values(entry)
    if token not in values:
        return UNLISTED_GAP
    return max(0.0, max(values.values()) - values[token])


def self_gaps(probe: SamePathProbe) -> list[float]:
    """The self-gap at each generated position of one probe."""
    return [
        self_gap(probe.positions[j] if j < len(probe.positions) else None, token)
        for j, token in enumerate(probe.token_ids)
    ]


def agreement(
    probe: SamePathProbe,
    tolerance: float,
    reference: list[Position] | None,
    large_gap: float,
) -> tuple[int, int, int | None]:
    """Of one probe's positions: how many are the engine's own top, how many leave out the
    reference's top where the reference is ``large_gap`` nats from the generated token,
    and the first position that fails either."""
    own = left_out = 0
    first_miss = None
    for j, token in enumerate(probe.token_ids):
        entry = probe.positions[j] if j < len(probe.positions) else None
        ok = self_top(entry, token, tolerance)
        own += ok
        listed = reference is None or j >= len(reference)
        if not listed and reference is not None:
            listed = lists_reference_top(entry, reference[j], large_gap)
        if not listed:
            left_out += 1
            ok = False
        if not ok and first_miss is None:
            first_miss = j
    return own, left_out, first_miss


def self_gap_allowance(
    settings: dict[str, Any], budget: float, kv_cache_in_effect: bool
) -> float | None:
    """The mean self-gap allowed: honest numerics between an engine's decode and prefill
    kernels; where podium made true a KV-cache change the reference cannot reproduce,
    plus ``self_gap_factor`` times the quality budget. None where the spec sets no bound."""
    margin = settings.get("max_mean_self_gap_nats")
    if margin is None:
        return None
    factor = float(settings.get("self_gap_factor", 0.0)) if kv_cache_in_effect else 0.0
    return float(margin) + factor * budget


def _probe_rows(
    probes: list[SamePathProbe],
    ev: ReferenceEvidence | None,
    tolerance: float,
    large_gap: float,
) -> tuple[list[dict[str, Any]], list[float]]:
    """Each probed answer's agreement with itself and the reference; every self-gap."""
    rows: list[dict[str, Any]] = []
    gaps: list[float] = []
    for probe in probes:
        reference = ev.scored.get(probe.record) if ev is not None else None
        own, left_out, first_miss = agreement(probe, tolerance, reference, large_gap)
        own_gaps = self_gaps(probe)
        gaps += own_gaps
        rows.append(
            {
                "record": probe.record,
                "prompt_id": probe.prompt_id,
                "tokens": len(probe.token_ids),
                "agreed": own,
                "mean_self_gap": math.fsum(own_gaps) / len(own_gaps) if own_gaps else 0.0,
                "reference_top_left_out": left_out,
                "first_mismatch": first_miss,
            }
        )
    return rows, gaps


def _summary(details: dict[str, Any], large_gap: float, probed: int) -> str:
    d = details
    slack, required = d["scoring_loss_slack"], d["required_fraction"]
    text = (
        f"{percent(d['fraction'])} of {d['tokens']} generated tokens in {probed} probed "
        f"answers are the engine's own teacher-forced top by value (required "
        f"{percent(required)}"
        + (f": {percent(d['min_fraction'])} less a KV cache's {slack:.3f}" if slack > 0 else "")
        + ")"
    )
    if d["max_reference_top_left_out"] is not None:
        text += (
            f"; {percent(d['reference_top_left_out'])} leave out the reference's top where it "
            f"is over {large_gap:g} nats from the generated token (allowed "
            f"{percent(d['max_reference_top_left_out'])})"
        )
    else:
        text += " (no reference: values only)"
    if d["max_mean_self_gap"] is not None:
        text += (
            f"; mean self-gap {d['mean_self_gap']:.4f} nats between its decode and its own "
            f"scoring of it (allowed {d['max_mean_self_gap']:.4f})"
        )
    return text


def same_path(ctx: CheckContext) -> CheckOutcome:
    settings = enabled(ctx.spec, "same_path")
    if settings is None:
        return disabled(CHECK_ID)
    if ctx.evidence is None:
        return skipped(CHECK_ID, "no timed run")
    if ctx.spec.tps.sampling.temperature > 0:
        return skipped(CHECK_ID, "the workload samples (temperature > 0): tokens are not argmax")
    probes = ctx.evidence.same_path
    if not probes:
        return skipped(CHECK_ID, "no timed answer with token ids to probe")
    tolerance = float(settings["tie_tolerance"])
    minimum = float(settings["min_fraction"])
    ev = ctx.reference_evidence
    decode = ctx.spec.check("reference_decode")
    allowed = allowance(ctx.spec, decode) if ev is not None and decode.get("enabled") else None
    large_gap = allowed.large_gap if allowed is not None else math.inf
    kv_cache = ev is not None and ev.model is not None and ev.model.kv_cache_in_effect()
    budget = float(ctx.spec.quality.budget_nats or 0.0)
    slack = budget * float(decode.get("large_share_factor", 0.0)) if kv_cache else 0.0
    required = max(minimum - slack, 0.0)
    rows, gaps = _probe_rows(probes, ev, tolerance, large_gap)
    total = sum(r["tokens"] for r in rows)
    matched = sum(r["agreed"] for r in rows)
    missing = sum(r["reference_top_left_out"] for r in rows)
    fraction = matched / total if total else 1.0
    left_share = missing / total if total else 0.0
    max_left = (
        left_out_allowance(allowed.large_share, total) if allowed is not None and total else None
    )
    mean_self_gap = math.fsum(gaps) / len(gaps) if gaps else 0.0
    max_self_gap = self_gap_allowance(settings, budget, kv_cache)
    details = {
        "mean_self_gap": mean_self_gap,
        "max_mean_self_gap": max_self_gap,
        "largest_self_gap": max(gaps, default=0.0),
        "kv_cache_in_effect": kv_cache,
        "fraction": fraction,
        "min_fraction": minimum,
        "required_fraction": required,
        "scoring_loss_slack": slack,
        "tie_tolerance": tolerance,
        "tokens": total,
        "with_reference": allowed is not None,
        "reference_top_left_out": left_share,
        "max_reference_top_left_out": max_left,
        "left_out_rate": allowed.large_share if allowed is not None else None,
        "probes": rows,
    }
    text = _summary(details, large_gap, len(rows))
    ok = (
        fraction >= required
        and (max_left is None or left_share <= max_left)
        and (max_self_gap is None or mean_self_gap <= max_self_gap)
    )
    return judged(
        CHECK_ID,
        ok,
        text,
        details,
        hint="decode and scoring must run the same model: no path switched by prompt_logprobs",
    )
