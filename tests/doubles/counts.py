"""Doubles that lie about how much they generated: ``integrity.lengths`` and
``tps.usage-mismatch``.

- ``EarlyStop``: ends at half of ``max_tokens`` despite ``ignore_eos``
  (``integrity.lengths``).
- ``InflatedUsage``: reports 3x the generated tokens in ``usage``
  (``tps.usage-mismatch``).
"""

from __future__ import annotations

from collections.abc import Iterator

from engines.baseline.generation import Generation, TokenStep
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams


class InflatedUsage(BaselineEngine):
    def report_usage(self, prompt_ids: list[int], output_ids: list[int]) -> dict[str, int]:
        n = 3 * len(output_ids)
        return {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": n,
            "total_tokens": len(prompt_ids) + n,
        }


class EarlyStop(BaselineEngine):
    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        gen = super().start(prompt_ids, sampling, prompt_logprobs)
        limit = max(1, (sampling.max_tokens or 2) // 2)
        inner = gen.steps

        def steps() -> Iterator[TokenStep]:
            for i, step in enumerate(inner):
                if i + 1 >= limit:
                    yield TokenStep(step.token_id, step.logprobs, "stop")
                    return
                yield step

        gen.steps = steps()
        return gen
