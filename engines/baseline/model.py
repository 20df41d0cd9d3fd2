"""The baseline engine: a transformers causal LM driven by an explicit decode loop.

The loop calls ``model(ids, cache=..., use_cache=True)`` one token at a time instead of
``model.generate`` so that per-token streaming, ``ignore_eos``, ``min_tokens`` and exact
token counts are under our control. It is the unoptimised reference: dynamic KV cache,
one sequence, no batching, no compilation.

Hook methods (override them in a subclass; adversarial test engines do exactly that):

- ``forward(ids, cache, all_logits)``: the only place the model runs. Override to swap
  layers, weights or precision for some calls.
- ``prefill(prompt_ids, prompt_logprobs)``: runs the prompt, returns the cache, the last
  position's logits and, when asked, the teacher-forced prompt logprobs. Override to use
  a different path when ``prompt_logprobs`` is requested.
- ``prompt_logprobs_from_logits(logprobs, targets, k)``: turns one chunk of float32
  log-softmax rows into per-position entries. Override to tamper with reported values.
- ``select_next_token(logits, sampling, generator, step)``: the per-step choice (argmax
  for greedy, seeded sampling otherwise).
- ``before_step(step)``: called before each generated token; add latency here.
- ``report_usage(prompt_ids, output_ids)``: the ``usage`` object of a response.
- ``start(prompt_ids, sampling, prompt_logprobs)``: the entry point the API calls; it
  returns a ``Generation`` whose ``steps`` yield ``TokenStep``s. Override to replace the
  whole decode (replayed answers, early stops).

Tensors never leave the engine (this module and ``engines.baseline.batch``, which scores
several prompts in one batch): callers see token ids, floats and ``TokenLogprob``
(``engines.baseline.generation``). Loading the checkpoint is ``engines.baseline.load``;
the attention self-test run as the engine loads is ``engines.baseline.self_test``.

``cancel()`` ends the work in flight: once it is called (it sets the ``cancelled``
event), the next chunk of a prompt or the next generated token raises ``Cancelled``,
until ``resume()``. Whoever owns the engine cancels when no answer is wanted any more
(the verifier's in-process reference, once its judging is over).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.baseline.batch import prefill_batch
from engines.baseline.generation import (
    Generation,
    PositionLogprobs,
    Prefill,
    TokenLogprob,
    TokenStep,
)
from engines.baseline.load import load_checkpoint
from engines.baseline.protocol import SamplingParams
from engines.baseline.self_test import prove

if TYPE_CHECKING:
    import torch

    from engines.baseline.attention import AttentionCheck

__all__ = ["BaselineEngine", "Cancelled"]

#: Float32 logit cells (positions x vocabulary) materialised at once when scoring a prompt.
LOGIT_CELLS_PER_CHUNK = 1 << 26
#: Positions one decoder pass of a scoring batch runs (hidden states only: small)
BATCH_TOKENS = 4096


class Cancelled(RuntimeError):
    """The engine's owner cancelled the work in flight (``BaselineEngine.cancelled``)."""


class BaselineEngine:
    """A local transformers checkpoint behind the hooks listed in the module docstring."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        device: str = "cpu",
        dtype: str = "float32",
        max_model_len: int | None = None,
        logprob_chunk_tokens: int | None = None,
        sliding_window: int | None = None,
        quantization: str | None = None,
        logit_cells: int | None = None,
        attention: str | None = None,
        self_test: bool | None = None,
    ) -> None:
        """``device`` is one of ``DEVICES``, ``dtype`` one of ``DTYPES`` (both, and
        ``QUANTIZATIONS``, in ``engines.baseline.load``): ``auto`` takes the GPU when
        there is one, and the checkpoint's own dtype. ``sliding_window`` replaces the
        checkpoint's local attention window (a lossy lever the rules allow);
        ``quantization`` (``QUANTIZATIONS``) rounds the weights at load. ``logit_cells``
        bounds the float32 logit cells (positions x vocabulary) one scoring chunk may hold
        (default ``LOGIT_CELLS_PER_CHUNK``, 256 MB); more cells, fewer and larger
        forward passes. ``attention`` names the attention implementation to serve with
        (transformers' default, ``sdpa``, when None); ``self_test`` proves it against eager
        attention on this device before serving (``engines.baseline.attention``; None: on
        CUDA only), switches to eager where it is wrong, and raises ``AttentionError`` when
        no path holds. ``attention_check`` keeps what the test found."""
        self.model_path = Path(model_path)
        self.cancelled = threading.Event()
        loaded = load_checkpoint(
            self.model_path,
            device=device,
            dtype=dtype,
            max_model_len=max_model_len,
            sliding_window=sliding_window,
            quantization=quantization,
            attention=attention,
        )
        self.device = loaded.device
        self.tokenizer = loaded.tokenizer
        self.model = loaded.model
        self.sliding_window = loaded.sliding_window
        self.quantization = quantization
        self._cache_arg = loaded.cache_arg
        self._decoder_cache_arg = loaded.decoder_cache_arg
        self.vocab_size = loaded.vocab_size
        self.max_model_len = loaded.max_model_len
        self.logprob_chunk_tokens = logprob_chunk_tokens or max(
            1, (logit_cells or LOGIT_CELLS_PER_CHUNK) // self.vocab_size
        )
        #: positions (all prompts of a batch together) one decoder pass of a batch runs
        self.batch_tokens = max(self.logprob_chunk_tokens, BATCH_TOKENS)
        self.bos_token_id: int | None = loaded.bos_token_id
        self.eos_token_ids = loaded.eos_token_ids
        self.sampling_defaults = loaded.sampling_defaults
        self._token_text: dict[int, str] = {}
        self.attention_check: AttentionCheck | None = None
        if self_test if self_test is not None else self.device.type == "cuda":
            self.attention_check = self.prove_attention()

    def prove_attention(self) -> AttentionCheck:
        """Test the attention path against eager on this device (switching to eager where
        it is wrong); ``AttentionError`` when even eager fails its own test."""
        return prove(
            self.model,
            cache_arg=self._cache_arg,
            window=self.sliding_window,
            max_len=self.max_model_len,
            vocab_size=self.vocab_size,
            device=self.device,
        )

    # -- text ----------------------------------------------------------------------------

    def encode_text(self, text: str, add_special_tokens: bool) -> list[int]:
        """Tokenise a text prompt as vLLM does: with ``add_special_tokens`` (the default of
        ``/v1/completions``) the tokenizer adds its own special tokens, a BOS for Gemma."""
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=add_special_tokens)
        return ids

    def render_chat(self, messages: list[dict[str, str]], add_generation_prompt: bool) -> list[int]:
        """Apply the model's chat template; the template places its own special tokens."""
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt
        )
        ids: list[int] = self.tokenizer.encode(str(text), add_special_tokens=False)
        return ids

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    def token_texts(self, ids: list[int]) -> str:
        """The text of ``ids`` with their special tokens, as vLLM echoes a token prompt."""
        return str(self.tokenizer.decode(ids, skip_special_tokens=False))

    def token_text(self, token_id: int) -> str:
        """The text of one token (special tokens included), as vLLM's ``decoded_token``."""
        text = self._token_text.get(token_id)
        if text is None:
            text = str(self.tokenizer.decode([token_id], skip_special_tokens=False))
            self._token_text[token_id] = text
        return text

    # -- hooks ---------------------------------------------------------------------------

    def forward(self, ids: torch.Tensor, cache: Any, all_logits: bool) -> tuple[torch.Tensor, Any]:
        """Run ``ids`` (1 x n) after ``cache``; logits of every position or only the last."""
        import torch

        kwargs = {self._cache_arg: cache}
        with torch.inference_mode():
            out = self.model(
                ids.to(self.device),
                use_cache=True,
                logits_to_keep=0 if all_logits else 1,
                **kwargs,
            )
        new_cache = getattr(out, "cache", None)
        return out.logits[0], out.past_key_values if new_cache is None else new_cache

    def prefill(self, prompt_ids: list[int], prompt_logprobs: int | None) -> Prefill:
        """Run the prompt, scoring it in chunks of positions when logprobs are asked for.

        Chunks go through the KV cache, so at most ``logprob_chunk_tokens`` x vocabulary
        float32 cells exist at once however long the prompt is.
        """
        import torch

        ids = torch.tensor([prompt_ids], dtype=torch.long)
        if prompt_logprobs is None:
            logits, cache = self.forward(ids, None, all_logits=False)
            return Prefill(cache, logits[-1].float())
        entries: list[PositionLogprobs | None] = [None]
        cache = None
        last: torch.Tensor | None = None
        step = self.logprob_chunk_tokens
        for start in range(0, len(prompt_ids), step):
            self.go_on()
            logits, cache = self.forward(ids[:, start : start + step], cache, all_logits=True)
            rows = logits.float()
            if last is not None:  # the previous chunk's last row predicts this chunk's first
                rows = torch.cat([last[None, :], rows])
                targets = ids[0, start : start + step]
            else:
                targets = ids[0, 1 : start + step]
            last = rows[-1]
            scored = rows[: len(targets)]
            if len(targets):
                with torch.inference_mode():
                    logprobs = torch.log_softmax(scored, dim=-1)
                entries.extend(self.prompt_logprobs_from_logits(logprobs, targets, prompt_logprobs))
        assert last is not None
        return Prefill(cache, last, entries)

    def prefill_batch(self, prompts: list[list[int]], prompt_logprobs: int) -> list[Prefill]:
        """Score several prompts in one padded batch; what ``prefill`` gives for each
        (``engines.baseline.batch``). The prefills carry no cache: they serve answers of
        one token (a scoring request's ``max_tokens: 1``)."""
        return prefill_batch(self, prompts, prompt_logprobs)

    def start_batch(
        self, prompts: list[list[int]], sampling: SamplingParams, prompt_logprobs: int
    ) -> list[Generation]:
        """``start`` for several scoring requests of one token each, prefilled in one batch."""
        if sampling.max_tokens != 1:
            raise ValueError("a batch serves answers of exactly one token")
        prefills = self.prefill_batch(prompts, prompt_logprobs)
        return [
            Generation(p, pre.prompt_logprobs, self._decode(pre, sampling))
            for p, pre in zip(prompts, prefills, strict=True)
        ]

    @classmethod
    def batches_scoring(cls) -> bool:
        """Whether scoring requests may be batched: only where no hook that scoring or
        decoding runs through is overridden (a subclass that changes them runs them)."""
        hooks = ("forward", "prefill", "start", "select_next_token", "before_step")
        return all(getattr(cls, h) is getattr(BaselineEngine, h) for h in hooks)

    def prompt_logprobs_from_logits(
        self, logprobs: torch.Tensor, targets: torch.Tensor, k: int
    ) -> list[PositionLogprobs | None]:
        """Per-position entries from log-softmax rows (n x vocab) and their actual tokens."""
        import torch

        with torch.inference_mode():
            chosen = logprobs.gather(1, targets.to(logprobs.device)[:, None])[:, 0]
            ranks = (logprobs > chosen[:, None]).sum(dim=1) + 1
            top_v, top_i = torch.topk(logprobs, k, dim=1) if k else (None, None)
        chosen_l, ranks_l, targets_l = chosen.tolist(), ranks.tolist(), targets.tolist()
        top_vl = top_v.tolist() if top_v is not None else [[] for _ in targets_l]
        top_il = top_i.tolist() if top_i is not None else [[] for _ in targets_l]
        return [
            PositionLogprobs(
                TokenLogprob(int(t), float(lp), int(r)),
                tuple(
                    TokenLogprob(int(i), float(v), j + 1)
                    for j, (i, v) in enumerate(zip(ti, tv, strict=True))
                ),
            )
            for t, lp, r, ti, tv in zip(targets_l, chosen_l, ranks_l, top_il, top_vl, strict=True)
        ]

    def select_next_token(
        self, logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator, step: int
    ) -> int:
        """Argmax when greedy; else temperature, top-k, top-p, then a seeded draw."""
        import torch

        if sampling.greedy:
            return int(torch.argmax(logits).item())
        scaled = logits / sampling.temperature
        if sampling.top_k and sampling.top_k < scaled.shape[-1]:
            kth = torch.topk(scaled, sampling.top_k).values[-1]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        if sampling.top_p < 1.0:
            values, order = torch.sort(scaled, descending=True)
            probs = torch.softmax(values, dim=-1)
            drop = torch.cumsum(probs, dim=-1) - probs > sampling.top_p
            scaled = scaled.scatter(0, order, values.masked_fill(drop, float("-inf")))
        probs = torch.softmax(scaled, dim=-1)
        return int(torch.multinomial(probs, 1, generator=generator).item())

    def cancel(self) -> None:
        """End the work in flight: its next chunk or token raises ``Cancelled``, and so
        does any work started before ``resume``."""
        self.cancelled.set()

    def resume(self) -> None:
        """Take work again after ``cancel``."""
        self.cancelled.clear()

    def go_on(self) -> None:
        """Raise ``Cancelled`` once the owner has set ``cancelled``; called before each
        chunk and each generated token."""
        if self.cancelled.is_set():
            raise Cancelled("the engine's owner cancelled the work in flight")

    def before_step(self, step: int) -> None:
        """Called before each generated token; the baseline adds no latency."""

    def report_usage(self, prompt_ids: list[int], output_ids: list[int]) -> dict[str, int]:
        """The ``usage`` a response reports: honest counts of prompt and generated tokens."""
        return {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": len(output_ids),
            "total_tokens": len(prompt_ids) + len(output_ids),
        }

    # -- generation ----------------------------------------------------------------------

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        """Prefill now (errors surface before any response is sent); decode lazily."""
        if sampling.max_tokens is None:
            raise ValueError("max_tokens must be resolved before generation")
        prefill = self.prefill(prompt_ids, prompt_logprobs)
        return Generation(prompt_ids, prefill.prompt_logprobs, self._decode(prefill, sampling))

    def _decode(self, prefill: Prefill, sampling: SamplingParams) -> Iterator[TokenStep]:
        import torch

        assert sampling.max_tokens is not None
        generator = torch.Generator(device=self.device)
        generator.manual_seed(sampling.seed if sampling.seed is not None else secrets.randbits(63))
        stop_ids = set(sampling.stop_token_ids)
        if not sampling.ignore_eos:
            stop_ids |= self.eos_token_ids
        suppress = torch.tensor(sorted(self.eos_token_ids | stop_ids), dtype=torch.long)
        logits, cache = prefill.last_logits, prefill.cache
        for step in range(sampling.max_tokens):
            self.go_on()
            self.before_step(step)
            choice_logits = logits
            if step < sampling.min_tokens and len(suppress):
                choice_logits = logits.index_fill(0, suppress.to(logits.device), float("-inf"))
            with torch.inference_mode():
                token = self.select_next_token(choice_logits, sampling, generator, step)
            entry = None
            if sampling.logprobs is not None:
                with torch.inference_mode():
                    row = torch.log_softmax(logits, dim=-1)[None, :]
                entry = self.prompt_logprobs_from_logits(
                    row, torch.tensor([token]), sampling.logprobs
                )[0]
            finish, stop_reason = None, None
            if token in stop_ids:
                finish = "stop"
                stop_reason = token if token in sampling.stop_token_ids else None
            elif step + 1 == sampling.max_tokens:
                finish = "length"
            yield TokenStep(token, entry, finish, stop_reason)
            if finish is not None:
                return
            step_logits, cache = self.forward(torch.tensor([[token]]), cache, all_logits=False)
            logits = step_logits[-1].float()
