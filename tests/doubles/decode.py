"""Doubles that decode cheaper than they score: ``integrity.reference-decode`` and
``integrity.same-path`` (and ``tps.prompt-mismatch`` for the one that forges prompt ids).

Each answers the judge's own questions honestly where it can (the verifier's proof is the
timed work, judged by its own model):

- ``SwitchPath``: clean when scored, every 3rd decoded token the 2nd best
  (``integrity.same-path``, ``integrity.reference-decode``).
- ``ForgedChat``: cheap tokens for chat requests only; asked to score an answer it gave,
  it lists only that token, as the top, with rank 1; every other request is honest
  (``integrity.reference-decode``, ``integrity.same-path``).
- ``ForgedPromptReplay``: decodes the first chat prompt once, then answers every chat
  request with that answer and reports that prompt's ids (``tps.prompt-mismatch``,
  ``integrity.reference-decode``). With ``ADVERSARY_HONEST_IDS=1`` it reports the ids of
  the prompt it was sent, so only the reference's judgement of the answer can catch it.
- ``GarbageTail``: honest first half of every chat answer, cheap second half
  (``integrity.reference-decode``).
- ``HonestUntilScored``: honest until the first scoring request (``prompt_logprobs``),
  cheap afterwards: the stage-order cheat (``integrity.reference-decode``).
- ``SometimesCheap``: one chat answer in ``ADVERSARY_EVERY`` (default 3) is cheap
  (``integrity.reference-decode``).
- ``DecodeWindow``: generation with a sliding window of ``CHEAT_WINDOW`` (16) tokens,
  scoring with ``CHEAT_SCORE_WINDOW`` (the model's own by default): a cheaper, lossier
  decode behind a milder PPL, a double spender of the quality budget
  (``integrity.reference-decode``). It got through on the ``tiny`` challenge until that
  check changed; ``tests/engines/test_cheats.py`` keeps it REJECTED.
- ``ForgedDecodeWindow``: ``DecodeWindow`` that also forges its scoring of its own answers
  as ``ForgedChat`` does, so self-consistency (``integrity.same-path``'s self-gap) says
  nothing and only ``integrity.reference-decode`` judges it. A mild one (scoring with a
  window of 16, decoding with 12, whose decode alone is over tiny's cap) is VERIFIED:
  the calibration table keeps it as the known escape (``docs/measurement.md``).
- ``RoutedDecodeWindow``: the same double spender with no memory at all: every request
  that carries the chat template's turn marker (a timed prompt, or a probe that scores
  one of its answers) runs with ``CHEAT_WINDOW``, every other request (a PPL record) with
  ``CHEAT_SCORE_WINDOW``. Its probes are answered by the model that decoded, so its
  self-gap is exactly 0, and a freshly started engine asked to score its answers would
  answer them the same way: self-consistency, however it is asked, is a filter it passes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from doubles._shared import is_chat, recorded, replay_steps, second_best
from engines.baseline.generation import Generation, PositionLogprobs, TokenLogprob
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams

if TYPE_CHECKING:
    import torch


class SwitchPath(BaselineEngine):
    """Clean when scored, cheaper (and worse) when decoding: every 3rd token is the 2nd best."""

    def select_next_token(
        self, logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator, step: int
    ) -> int:
        import torch

        if sampling.greedy and step % 3 == 2:
            return int(torch.topk(logits, 2).indices[1].item())
        return super().select_next_token(logits, sampling, generator, step)


class _Cheap(BaselineEngine):
    """Shared hook: ``cheap(step)`` says whether this token of this answer is cheapened."""

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        self._cheat = prompt_logprobs is None and self.cheat_on(prompt_ids)
        return super().start(prompt_ids, sampling, prompt_logprobs)

    def cheat_on(self, prompt_ids: list[int]) -> bool:
        return is_chat(self, prompt_ids)

    def cheap(self, step: int, max_tokens: int) -> bool:
        return step % 2 == 1

    def select_next_token(
        self, logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator, step: int
    ) -> int:
        if getattr(self, "_cheat", False) and self.cheap(step, sampling.max_tokens or 0):
            return second_best(logits)
        return super().select_next_token(logits, sampling, generator, step)


class ForgedChat(_Cheap):
    """Cheap chat answers; its scoring of its own answers is forged, all else is honest."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answers: list[tuple[int, ...]] = []

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        gen = super().start(prompt_ids, sampling, prompt_logprobs)
        if prompt_logprobs is not None:
            self._forge(gen)
            return gen
        return recorded(gen, lambda out: self._answers.append(tuple(out)))

    def _forge(self, gen: Generation) -> None:
        """Where the prompt ends with an answer it gave: that token is the top, rank 1."""
        entries = gen.prompt_logprobs
        ids = gen.prompt_ids
        if entries is None:
            return
        for answer in self._answers:
            n = len(answer)
            if n and len(ids) > n and tuple(ids[-n:]) == answer:
                for i in range(len(ids) - n, len(ids)):
                    e = entries[i]
                    if e is not None:
                        best = max([e.chosen.logprob, *(t.logprob for t in e.top)])
                        top = TokenLogprob(e.chosen.token_id, best, 1)
                        entries[i] = PositionLogprobs(top, (top,))
                return


class ForgedPromptReplay(BaselineEngine):
    """One honest chat answer, replayed for every chat request with that prompt's ids."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._first: tuple[list[int], list[int]] | None = None

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        if prompt_logprobs is not None or not is_chat(self, prompt_ids):
            return super().start(prompt_ids, sampling, prompt_logprobs)
        if self._first is None:
            gen = super().start(prompt_ids, sampling, prompt_logprobs)
            self._first = (list(prompt_ids), [s.token_id for s in gen.steps])
        first_prompt, answer = self._first
        if os.environ.get("ADVERSARY_HONEST_IDS") == "1":
            first_prompt = list(prompt_ids)  # the ids it was sent: only the answer is forged
        n = min(len(answer), sampling.max_tokens or len(answer))
        return Generation(list(first_prompt), None, replay_steps(answer, n))


class GarbageTail(_Cheap):
    """Honest first half of every chat answer; the second half is the second-best token."""

    def cheap(self, step: int, max_tokens: int) -> bool:
        return step >= max_tokens // 2


class HonestUntilScored(_Cheap):
    """Honest until the first prompt_logprobs request; cheap chat answers after it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._scored = False

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        if prompt_logprobs is not None:
            self._scored = True
        return super().start(prompt_ids, sampling, prompt_logprobs)

    def cheat_on(self, prompt_ids: list[int]) -> bool:
        return self._scored and is_chat(self, prompt_ids)


class SometimesCheap(_Cheap):
    """One chat answer in ``ADVERSARY_EVERY`` (3) is cheap; the others are honest."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._chats = 0

    def cheat_on(self, prompt_ids: list[int]) -> bool:
        if not is_chat(self, prompt_ids):
            return False
        self._chats += 1
        return self._chats % int(os.environ.get("ADVERSARY_EVERY", "3")) == 0


class DecodeWindow(BaselineEngine):
    """Generation with the sliding window cut to ``CHEAT_WINDOW`` (16) tokens; scoring with
    ``CHEAT_SCORE_WINDOW`` (the model's own window when unset), so the PPL is that of a
    milder model than the one that decodes."""

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        config = self.model.config
        if not hasattr(self, "_window"):
            scored = os.environ.get("CHEAT_SCORE_WINDOW")
            self._window = int(scored) if scored else config.sliding_window
        lossy = prompt_logprobs is None
        config.sliding_window = int(os.environ.get("CHEAT_WINDOW", "16")) if lossy else self._window
        return super().start(prompt_ids, sampling, prompt_logprobs)


class ForgedDecodeWindow(DecodeWindow):
    """A double spender that forges its self-consistency too: it decodes with
    ``CHEAT_WINDOW`` and scores with ``CHEAT_SCORE_WINDOW`` (``DecodeWindow``), remembers
    its answers, and where a scoring request ends with one of them it lists only the token
    it generated, as its top (``ForgedChat``'s forgery): the self-gap and the share of
    tokens that are its own top say nothing then, and only the reference's judgement of
    the answers (``integrity.reference-decode``) is left."""

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        if not hasattr(self, "_answers"):
            self._answers: list[tuple[int, ...]] = []
        gen = super().start(prompt_ids, sampling, prompt_logprobs)
        if prompt_logprobs is not None:
            ForgedChat._forge(self, gen)  # type: ignore[arg-type]
            return gen
        return recorded(gen, lambda out: self._answers.append(tuple(out)))


class RoutedDecodeWindow(BaselineEngine):
    """A double spender that routes by the request's shape, remembering nothing: a prompt
    that carries the chat template's turn marker (a timed request, or a probe scoring one
    of its answers) runs with the harsher ``CHEAT_WINDOW``; any other (a PPL record) with
    ``CHEAT_SCORE_WINDOW``. What it decodes and what it says of its own answers come from
    one model, so no question about them, asked now or of a restarted engine, tells it
    from an honest one; only the reference's judgement of the answers
    (``integrity.reference-decode``) is left."""

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        if not hasattr(self, "_own_window"):
            self._own_window = int(self.model.config.sliding_window)
        if is_chat(self, prompt_ids):
            window = int(os.environ.get("CHEAT_WINDOW", "16"))
        else:
            window = int(os.environ.get("CHEAT_SCORE_WINDOW", str(self._own_window)))
        self.model.config.sliding_window = window
        return super().start(prompt_ids, sampling, prompt_logprobs)
