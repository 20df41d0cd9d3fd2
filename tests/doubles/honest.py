"""Honest yardsticks: engines that attack no check.

- ``Honest``: the baseline unchanged, the yardstick every cheat is measured against.
- ``Undeclared``: an approximation the engine makes on every path without declaring it
  (a window of ``UNDECLARED_WINDOW``, weights rounded to ``UNDECLARED_QUANT``, keys and
  values rounded to fp8 with ``UNDECLARED_KV=fp8``: the stand-in for an fp8 KV cache
  where vLLM's CPU build cannot serve one), as a custom engine's own approximation
  would be. The verifier's reference runs the
  unmodified model and judges it by the quality budget alone (``ppl.cap``,
  ``integrity.reference-decode`` must stay quiet inside the cap).
- ``NgramLookup``: honest speculative decoding by n-gram lookup in the prompt and the
  answer so far; its speed varies with the text, so ``integrity.controls`` must find
  its fresh controls as fast as its real prompts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

from engines.baseline.generation import Generation, Prefill, TokenStep
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams


class Honest(BaselineEngine):
    """The baseline unchanged: the yardstick every cheat is measured against."""


class Undeclared(BaselineEngine):
    """Honest, with an approximation it does not declare, on every path alike: a sliding
    window of ``UNDECLARED_WINDOW`` and/or weights rounded to ``UNDECLARED_QUANT`` (int8,
    int4). The verifier's reference runs the unmodified model and judges it by the budget."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if os.environ.get("UNDECLARED_WINDOW"):
            kwargs["sliding_window"] = int(os.environ["UNDECLARED_WINDOW"])
        if os.environ.get("UNDECLARED_QUANT"):
            kwargs["quantization"] = os.environ["UNDECLARED_QUANT"]
        super().__init__(*args, **kwargs)
        if os.environ.get("UNDECLARED_KV") == "fp8":
            self._round_keys_and_values()

    def _round_keys_and_values(self) -> None:
        """Every key and value projection's output rounded to float8 e4m3 (scale 1, as an
        fp8 KV cache without scales stores it), on the scoring and the decoding path alike."""
        import torch

        def to_fp8(_module: Any, _inputs: Any, output: torch.Tensor) -> torch.Tensor:
            return output.to(torch.float8_e4m3fn).to(output.dtype)

        for name, module in self.model.named_modules():
            if name.endswith((".k_proj", ".v_proj")):
                module.register_forward_hook(to_fp8)


class NgramLookup(BaselineEngine):
    """Honest speculative decoding by n-gram lookup (prompt lookup, vLLM's ``ngram``):
    where the last ``NGRAM_N`` (3, down to 1) tokens occurred before in the prompt or the
    answer, the ``NGRAM_K`` (4) tokens that followed are proposed and checked in one
    forward pass; the longest prefix the model agrees with is kept, so the answer is the
    model's own greedy answer (up to the last bits of a batched pass). Only the timed
    shape (greedy, ``ignore_eos``, no logprobs, no stop ids) speculates; the rest decodes
    as the baseline does. Its speed depends on how much an answer repeats what came
    before it, the thing a fresh control must share with a real prompt."""

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        plain = (
            prompt_logprobs is not None
            or not sampling.greedy
            or not sampling.ignore_eos
            or sampling.logprobs is not None
            or sampling.min_tokens
            or sampling.stop_token_ids
            or sampling.stop
            or not sampling.max_tokens
        )
        if plain:
            return super().start(prompt_ids, sampling, prompt_logprobs)
        prefill = self.prefill(prompt_ids, None)
        return Generation(prompt_ids, None, self._speculate(prompt_ids, prefill, sampling))

    def _lookup(self, tokens: list[int], n: int, k: int) -> list[int]:
        for size in range(min(n, len(tokens) - 1), 0, -1):
            tail = tokens[-size:]
            for start in range(len(tokens) - size - 1, -1, -1):
                if tokens[start : start + size] == tail:
                    return tokens[start + size : start + size + k]
        return []

    def _speculate(
        self, prompt_ids: list[int], prefill: Prefill, sampling: SamplingParams
    ) -> Iterator[TokenStep]:
        import copy

        import torch

        n, k = int(os.environ.get("NGRAM_N", "3")), int(os.environ.get("NGRAM_K", "4"))
        total = sampling.max_tokens or 0
        tokens = list(prompt_ids)
        logits, cache = prefill.last_logits, prefill.cache
        produced = 0

        def step(token: int) -> TokenStep:
            nonlocal produced
            produced += 1
            tokens.append(token)
            return TokenStep(token, None, "length" if produced == total else None)

        while produced < total:
            self.go_on()
            token = int(torch.argmax(logits).item())
            yield step(token)
            if produced == total:
                return
            draft = self._lookup(tokens, n, min(k, total - produced))
            if not draft:
                out, cache = self.forward(torch.tensor([[token]]), cache, all_logits=False)
                logits = out[-1].float()
                continue
            trial = copy.deepcopy(cache)
            out, trial = self.forward(torch.tensor([[token, *draft]]), trial, all_logits=True)
            predicted = out.float().argmax(-1).tolist()
            kept = 0
            while kept < len(draft) and predicted[kept] == draft[kept]:
                kept += 1
            for accepted in draft[:kept]:
                yield step(accepted)
            if produced == total:
                return
            if kept == len(draft):
                cache, logits = trial, out[-1].float()
            else:  # run what was kept through the real cache (the trial one holds the rest)
                out, cache = self.forward(
                    torch.tensor([[token, *draft[:kept]]]), cache, all_logits=False
                )
                logits = out[-1].float()
