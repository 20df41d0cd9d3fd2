"""Scoring several prompts in one padded batch: the scoring requests of the reference.

The prompts are padded on the right: in a causal model a real token never attends to a
pad after it, so every real position computes what it computes alone (up to the last
bits of float addition order). The decoder runs chunks of up to ``batch_tokens``
positions (all prompts together) through the KV cache and keeps only its hidden states;
the output head then turns the rows that are scored into logits
``logprob_chunk_tokens`` rows at a time, so the full-vocabulary logits of a large batch
never exist at once. The prefills carry no cache: they serve answers of one token (a
scoring request's ``max_tokens: 1``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engines.baseline.generation import PositionLogprobs, Prefill

if TYPE_CHECKING:
    import torch

    from engines.baseline.model import BaselineEngine


def prefill_batch(
    engine: BaselineEngine, prompts: list[list[int]], prompt_logprobs: int
) -> list[Prefill]:
    """What ``engine.prefill`` gives for each of ``prompts``, scored as one batch."""
    import torch

    if not prompts or any(not p for p in prompts):
        raise ValueError("every prompt of a batch needs at least one token")
    width = max(len(p) for p in prompts)
    ids = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, : len(p)] = torch.tensor(p, dtype=torch.long)
    step = max(1, engine.batch_tokens // len(prompts))
    entries: list[list[PositionLogprobs | None]] = [[None] for _ in prompts]
    last: list[torch.Tensor | None] = [None] * len(prompts)
    cache = None
    previous: torch.Tensor | None = None  # each sequence's hidden row before this chunk
    for start in range(0, width, step):
        engine.go_on()
        hidden, cache = _hidden_rows(engine, ids[:, start : start + step], cache)
        span = hidden.shape[1]
        full = hidden if previous is None else torch.cat([previous[:, None], hidden], 1)
        offset = start if previous is None else start - 1  # position of full[:, 0]
        for i, p in enumerate(prompts):
            first, end = max(start, 1), min(start + span, len(p))
            if first < end:  # the row of position t - 1 predicts the token at t
                rows = full[i, first - 1 - offset : end - 1 - offset]
                entries[i].extend(_score(engine, rows, ids[i, first:end], prompt_logprobs))
            if start <= len(p) - 1 < start + span:
                last[i] = _head(engine, hidden[i, len(p) - 1 - start][None])[0]
        previous = hidden[:, -1]
    out = []
    for row, scored_entries in zip(last, entries, strict=True):
        assert row is not None
        out.append(Prefill(None, row, scored_entries))
    return out


def _score(
    engine: BaselineEngine, rows: torch.Tensor, targets: torch.Tensor, k: int
) -> list[PositionLogprobs | None]:
    """Entries for hidden ``rows`` and the tokens they predict, ``logprob_chunk_tokens``
    rows of logits at a time."""
    import torch

    entries: list[PositionLogprobs | None] = []
    for j in range(0, len(rows), engine.logprob_chunk_tokens):
        part = slice(j, j + engine.logprob_chunk_tokens)
        with torch.inference_mode():
            logprobs = torch.log_softmax(_head(engine, rows[part]), dim=-1)
        entries.extend(engine.prompt_logprobs_from_logits(logprobs, targets[part], k))
    return entries


def _hidden_rows(engine: BaselineEngine, ids: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]:
    """The decoder's last hidden states of a batch ``ids`` (b x n) after ``cache``."""
    import torch

    decoder = engine.model.get_decoder()
    kwargs = {engine._decoder_cache_arg: cache}
    with torch.inference_mode():
        out = decoder(input_ids=ids.to(engine.device), use_cache=True, **kwargs)
    new_cache = getattr(out, "cache", None)
    return out.last_hidden_state, out.past_key_values if new_cache is None else new_cache


def _head(engine: BaselineEngine, hidden: torch.Tensor) -> torch.Tensor:
    """Float32 logits of hidden rows (n x hidden): the output head, and the final
    logit soft-cap where the model has one, as the model's own forward applies them."""
    import torch

    model = engine.model
    with torch.inference_mode():
        logits = model.get_output_embeddings()(hidden)
        cap = getattr(model.config.get_text_config(), "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
    return logits.float()
