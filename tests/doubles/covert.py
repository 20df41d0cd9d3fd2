"""A double that decodes honestly and tries to carry held-out data out in its numbers.

- ``Covert``: every held-out PPL record it scores is rounded down onto a grid of
  ``GRID`` (2^-10) nats, and its last position lowered by ``k * 2^-37`` nats, ``k`` being 27
  bits of the record's own tokens (the first three after the first, 9 bits each): the
  record's NLL, whatever is said of it at full precision, carries ``k`` in its low bits
  (``decode_nll``). Its timed answers are paced so that its median TPS says a 3-bit number
  (``COVERT_TPS[j]``). It prints what it sent (``COVERT-SENT``) to its own log.

It attacks no check (every number it reports is a little worse than its model's, never
better, and every argmax is kept), so its verdict is an honest engine's; what it must not
get is a report that carries more than the stated bits of what it chose
(``tests/verifier/test_covert_channel.py``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Iterator

from doubles._shared import is_chat
from engines.baseline.generation import Generation, PositionLogprobs, TokenLogprob, TokenStep
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams

#: the grid every scored log-probability is rounded down onto (nats)
GRID = 2.0**-10
#: one unit of the hidden number (nats): 27 bits fit under one step of the grid
UNIT = 2.0**-37
BITS = 27
#: the speeds the timed answers are paced to, one per 3-bit value (tokens/s)
COVERT_TPS = (40.0, 48.0, 57.6, 69.1, 82.9, 99.5, 119.4, 143.3)


def secret_of(prompt_ids: list[int]) -> int:
    """The 27 bits of a record the double hides: its tokens 1..3, 9 bits each."""
    k = 0
    for tok in [*prompt_ids[1:4], 0, 0, 0][:3]:
        k = (k << 9) | (tok & 0x1FF)
    return k


def decode_nll(nll_per_token: float, tokens: int) -> int:
    """The hidden number in a record's NLL as a report gives it (per token, and the count)."""
    total = nll_per_token * tokens
    return round((total % GRID) / UNIT) % (1 << BITS)


def _shift(t: TokenLogprob, by: float) -> TokenLogprob:
    return TokenLogprob(t.token_id, math.floor(t.logprob / GRID) * GRID - by, t.rank)


class Covert(BaselineEngine):
    """Honest tokens; scored records and timing that carry what it saw."""

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        gen = super().start(prompt_ids, sampling, prompt_logprobs)
        if prompt_logprobs is not None and not is_chat(self, prompt_ids):
            k = secret_of(prompt_ids)
            entries = gen.prompt_logprobs or []
            last = max((i for i, e in enumerate(entries) if e is not None), default=-1)
            gen.prompt_logprobs = [
                None
                if e is None
                else PositionLogprobs(
                    _shift(e.chosen, k * UNIT if i == last else 0.0),
                    tuple(_shift(t, k * UNIT if i == last else 0.0) for t in e.top),
                )
                for i, e in enumerate(entries)
            ]
            print("COVERT-SENT " + json.dumps({"k": k}), file=sys.stderr, flush=True)
        elif prompt_logprobs is None and (sampling.max_tokens or 0) > 1:
            gen.steps = self._paced(gen.steps, sampling.max_tokens or 1)
        return gen

    def _paced(self, steps: Iterator[TokenStep], n: int) -> Iterator[TokenStep]:
        """The answer, ending no sooner than ``n`` tokens at ``COVERT_TPS[j]`` allow."""
        j = int(os.environ.get("COVERT_J", "5"))
        t0 = time.perf_counter()
        yield from steps
        rest = n / COVERT_TPS[j] - (time.perf_counter() - t0)
        if rest > 0:
            time.sleep(rest)
