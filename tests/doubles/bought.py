"""Doubles that try to buy an allowance: with a number they report, a lever they declare
without using it, or a top they withhold (``docs/measurement.md``, "Nothing can be
bought"). One class, ``BuysAllowance``, whose purchases are switched on one by one, so a
test can run the same engine with and without what it bought and compare the verdicts:

- ``BUY_LOWER_NATS`` (0: off): every log-probability of a scoring answer reported that
  many nats *lower* than its model computes (never higher, so no argmax moves): a worse
  PPL, free under a cap, that once widened the decode's allowance;
- ``BUY_HIDE_TOPS=1``: a scoring answer lists only the token asked about, labelled the
  top, never the engine's own top (its "own top" is then whatever it scored);
- ``BUY_LOSSY_NATS`` (0: off): decoding keeps the second-best token wherever it is within
  that many nats of the top: what a lossy speculative decoder keeps when it accepts a
  draft that is "close enough" (0.9 nats in the issue that found the hole);
- ``BUY_DECODE_WINDOW`` (unset: off): decoding runs with this sliding window while scoring
  keeps the model's own, a decode whose own model may be over the cap.

A declared lever it does not use (``KV_CACHE_DTYPE``) is the bundle's frozen config, not
this class's: the baseline engine ignores that knob. None of it may move a verdict: the
decode is judged by ``integrity.reference-decode`` against the spec's budget, a withheld
top fails ``ppl.reference-mismatch``, and a declared KV cache widens
``integrity.same-path`` only where podium made it true (the pinned vLLM image, rebuilt by
the verifier, started by podium's own launcher: ``verifier.checks.vllm_image``).

``ForgedVllm`` is the same engine posing as vLLM: a ``kind = "vllm"`` entry that runs
podium's baseline engine, declares ``KV_CACHE_DTYPE = "fp8"`` and, as it loads, prints
the ``non-default args:`` line vLLM would print for its frozen knobs (``FORGE_VLLM_ARGS``:
the dict's text), so the engine's own account of itself matches what it froze. It once
bought the KV cache's widening of ``integrity.same-path`` and spent it on a lossy decode
(``BUY_LOSSY_NATS``): VERIFIED at 1.39x the honest TPS. Now its image is
``engine.not-vllm`` at intake where it starts the baseline, and judged against the plain
budget of ``integrity.same-path`` where its launcher only bears podium's name.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from doubles._shared import env_float
from engines.baseline.generation import Generation, PositionLogprobs, TokenLogprob
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams

if TYPE_CHECKING:
    import torch


class BuysAllowance(BaselineEngine):
    """The purchases of the module docstring, each switched by its variable."""

    def prompt_logprobs_from_logits(
        self, logprobs: torch.Tensor, targets: torch.Tensor, k: int
    ) -> list[PositionLogprobs | None]:
        entries = super().prompt_logprobs_from_logits(logprobs, targets, k)
        lower = env_float("BUY_LOWER_NATS", 0.0)
        hide = os.environ.get("BUY_HIDE_TOPS") == "1"
        out: list[PositionLogprobs | None] = []
        for e in entries:
            if e is None:
                out.append(None)
                continue

            def down(t: TokenLogprob) -> TokenLogprob:
                return TokenLogprob(t.token_id, t.logprob - lower, t.rank)

            chosen = down(e.chosen)
            if hide:  # the scored token alone, as the top
                chosen = TokenLogprob(chosen.token_id, chosen.logprob, 1)
                out.append(PositionLogprobs(chosen, (chosen,)))
            else:
                out.append(PositionLogprobs(chosen, tuple(down(t) for t in e.top)))
        return out

    def select_next_token(
        self, logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator, step: int
    ) -> int:
        import torch

        nats = env_float("BUY_LOSSY_NATS", 0.0)
        if not sampling.greedy or nats <= 0:
            return super().select_next_token(logits, sampling, generator, step)
        values, ids = torch.topk(torch.log_softmax(logits.float(), dim=-1), 2)
        if float(values[0] - values[1]) <= nats:
            return int(ids[1].item())  # a "draft" close enough to the top: kept
        return int(ids[0].item())

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        window = os.environ.get("BUY_DECODE_WINDOW")
        if window:
            config = self.model.config
            if not hasattr(self, "_own_window"):
                self._own_window = int(config.sliding_window)
            config.sliding_window = int(window) if prompt_logprobs is None else self._own_window
        return super().start(prompt_ids, sampling, prompt_logprobs)


class ForgedVllm(BuysAllowance):
    """``BuysAllowance`` that logs a vLLM ``non-default args:`` line as it loads."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        import sys

        forged = os.environ.get("FORGE_VLLM_ARGS")
        if forged:
            sys.stderr.write(
                "(APIServer pid=1) INFO 12-06 04:00:00 [api_utils.py:286] "
                f"non-default args: {forged}\n"
            )
            sys.stderr.flush()
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
