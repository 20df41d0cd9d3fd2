"""Doubles that misreport their scoring (``prompt_logprobs``): the ``ppl.*`` checks.

- ``PositiveLogprobs``: returns raw logits instead of logprobs (``ppl.logprob-positive``).
- ``ScaledLogprobs``: every reported logprob times ``ADVERSARY_SCALE`` (0.85): all <= 0,
  every argmax unchanged, a PPL far better than the model's (``ppl.reference-mismatch``).
- ``FlatterLogprobs``: every reported logprob raised by ``CHEAT_NATS`` (0.0199) nats,
  capped at 0: just inside ``max_lower_nats`` (``ppl.reference-mismatch``).
- ``FlatterSomeRecords``: one held-out PPL record in ``CHEAT_EVERY`` (16) scored with
  every logprob at 0; the reference's sample of records misses it half the time
  (``ppl.reference-mismatch``).
- ``Degraded``: noisy weights everywhere, scored honestly, so a higher PPL (``ppl.cap``).

``FlatterLogprobs`` and ``FlatterSomeRecords`` were written against the checks as they
once stood, and each got through on the ``tiny`` challenge until the check it aimed at was
changed; ``tests/engines/test_cheats.py`` keeps them REJECTED.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from doubles._shared import env_float
from engines.baseline.generation import Generation, PositionLogprobs, TokenLogprob
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams

if TYPE_CHECKING:
    import torch


class PositiveLogprobs(BaselineEngine):
    """What ``--logprobs-mode raw_logits`` looks like: logits where logprobs belong."""

    def prompt_logprobs_from_logits(
        self, logprobs: torch.Tensor, targets: torch.Tensor, k: int
    ) -> list[PositionLogprobs | None]:
        entries = super().prompt_logprobs_from_logits(logprobs, targets, k)
        shifted: list[PositionLogprobs | None] = []
        for e in entries:
            if e is None:
                shifted.append(None)
                continue
            bump = lambda t: TokenLogprob(t.token_id, t.logprob + 12.0, t.rank)  # noqa: E731
            shifted.append(PositionLogprobs(bump(e.chosen), tuple(bump(t) for t in e.top)))
        return shifted


class ScaledLogprobs(BaselineEngine):
    """Reports every logprob times ``ADVERSARY_SCALE`` (0.85): a better PPL than the model's."""

    def prompt_logprobs_from_logits(
        self, logprobs: torch.Tensor, targets: torch.Tensor, k: int
    ) -> list[PositionLogprobs | None]:
        scale = float(os.environ.get("ADVERSARY_SCALE", "0.85"))
        scaled = lambda t: TokenLogprob(t.token_id, t.logprob * scale, t.rank)  # noqa: E731
        return [
            None if e is None else PositionLogprobs(scaled(e.chosen), tuple(map(scaled, e.top)))
            for e in super().prompt_logprobs_from_logits(logprobs, targets, k)
        ]


def _flattered(entry: PositionLogprobs | None, nats: float) -> PositionLogprobs | None:
    if entry is None:
        return None

    def up(t: TokenLogprob) -> TokenLogprob:
        return TokenLogprob(t.token_id, min(0.0, t.logprob + nats), t.rank)

    return PositionLogprobs(up(entry.chosen), tuple(up(t) for t in entry.top))


class FlatterLogprobs(BaselineEngine):
    """Every reported prompt logprob raised by ``CHEAT_NATS`` (just under the lower bound)."""

    def prompt_logprobs_from_logits(
        self, logprobs: torch.Tensor, targets: torch.Tensor, k: int
    ) -> list[PositionLogprobs | None]:
        nats = env_float("CHEAT_NATS", 0.0199)
        entries = super().prompt_logprobs_from_logits(logprobs, targets, k)
        return [_flattered(e, nats) for e in entries]


class FlatterSomeRecords(BaselineEngine):
    """One held-out PPL record in ``CHEAT_EVERY`` (16), in the order they come, scored with
    every logprob at 0; same-path probes (their prompt is a chat prompt) are left honest."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._records = 0
        self._flatter = False

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        marker = self.tokenizer.convert_tokens_to_ids("<start_of_turn>")
        record = prompt_logprobs is not None and marker not in prompt_ids
        self._flatter = False
        if record:
            self._flatter = self._records % int(os.environ.get("CHEAT_EVERY", "16")) == 0
            self._records += 1
            if self._flatter:
                print("CHEAT-FLATTERED " + json.dumps(prompt_ids), file=sys.stderr, flush=True)
        return super().start(prompt_ids, sampling, prompt_logprobs)

    def prompt_logprobs_from_logits(
        self, logprobs: torch.Tensor, targets: torch.Tensor, k: int
    ) -> list[PositionLogprobs | None]:
        entries = super().prompt_logprobs_from_logits(logprobs, targets, k)
        return [_flattered(e, 100.0) for e in entries] if self._flatter else entries


class Degraded(BaselineEngine):
    """Weights with seeded Gaussian noise (relative scale ADVERSARY_NOISE, default 0.25)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        import torch

        scale = float(os.environ.get("ADVERSARY_NOISE", "0.25"))
        g = torch.Generator().manual_seed(1234)
        with torch.no_grad():
            for name, p in self.model.named_parameters():
                if p.dim() == 2 and "embed" not in name:
                    std = float(p.detach().float().std())  # a number: the weights may be on a GPU
                    noise = torch.randn(p.shape, generator=g) * std * scale
                    p.add_(noise.to(p.dtype).to(p.device))
