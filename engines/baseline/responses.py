"""Response bodies in vLLM's OpenAI-compatible shapes, built from engine results.

Log-probabilities of ``-inf`` are reported as -9999.0, as vLLM does, because JSON has no
infinity. Token strings are vLLM's ``decoded_token`` (special tokens included); with
``return_tokens_as_token_ids`` they are ``"token_id:N"`` so a client can map them back
without a tokenizer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from engines.baseline.generation import PositionLogprobs, TokenLogprob

TokenText = Callable[[int], str]


def clamp(logprob: float) -> float:
    return logprob if math.isfinite(logprob) else -9999.0


def prompt_logprobs_json(
    entries: list[PositionLogprobs | None], token_text: TokenText
) -> list[dict[str, dict[str, Any]] | None]:
    """vLLM's ``prompt_logprobs``: per position, token id (string key) -> logprob, rank, text."""
    out: list[dict[str, dict[str, Any]] | None] = []
    for entry in entries:
        if entry is None:
            out.append(None)
            continue
        position: dict[str, dict[str, Any]] = {}
        for item in (entry.chosen, *entry.top):
            position.setdefault(str(item.token_id), _vllm_logprob(item, token_text))
        out.append(position)
    return out


def _vllm_logprob(item: TokenLogprob, token_text: TokenText) -> dict[str, Any]:
    return {
        "logprob": clamp(item.logprob),
        "rank": item.rank,
        "decoded_token": token_text(item.token_id),
    }


class LegacyLogprobs:
    """The OpenAI completions ``logprobs`` object, grown token by token."""

    def __init__(self, token_text: TokenText, as_ids: bool, text_offset: int = 0) -> None:
        self._text = token_text
        self._as_ids = as_ids
        self._offset = text_offset
        self.tokens: list[str] = []
        self.token_logprobs: list[float | None] = []
        self.top_logprobs: list[dict[str, float] | None] = []
        self.text_offset: list[int] = []

    def _name(self, token_id: int) -> str:
        return f"token_id:{token_id}" if self._as_ids else self._text(token_id)

    def add(self, token_id: int, entry: PositionLogprobs | None) -> None:
        name = self._name(token_id)
        self.tokens.append(name)
        self.text_offset.append(self._offset)
        self._offset += len(self._text(token_id))
        if entry is None:
            self.token_logprobs.append(None)
            self.top_logprobs.append(None)
            return
        self.token_logprobs.append(clamp(entry.chosen.logprob))
        top: dict[str, float] = {}
        for item in (entry.chosen, *entry.top):
            top.setdefault(self._name(item.token_id), clamp(item.logprob))
        self.top_logprobs.append(top)

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "token_logprobs": self.token_logprobs,
            "top_logprobs": self.top_logprobs,
            "text_offset": self.text_offset,
        }


def chat_logprob_json(
    token_id: int, entry: PositionLogprobs, token_text: TokenText
) -> dict[str, Any]:
    """One item of a chat choice's ``logprobs.content``."""

    def item(tl: TokenLogprob) -> dict[str, Any]:
        text = token_text(tl.token_id)
        return {"token": text, "logprob": clamp(tl.logprob), "bytes": list(text.encode("utf-8"))}

    return {**item(entry.chosen), "top_logprobs": [item(t) for t in entry.top]}


class IncrementalText:
    """Streaming detokenisation (vLLM's prefix/read offsets): never splits a character.

    Text is held back while the newest tokens decode to an incomplete UTF-8 sequence.
    """

    def __init__(self, decode: Callable[[list[int]], str]) -> None:
        self._decode = decode
        self._ids: list[int] = []
        self._prefix = 0
        self._read = 0

    def add(self, token_id: int) -> str:
        self._ids.append(token_id)
        prefix_text = self._decode(self._ids[self._prefix : self._read])
        new_text = self._decode(self._ids[self._prefix :])
        if len(new_text) > len(prefix_text) and not new_text.endswith("\ufffd"):
            self._prefix, self._read = self._read, len(self._ids)
            return new_text[len(prefix_text) :]
        return ""
