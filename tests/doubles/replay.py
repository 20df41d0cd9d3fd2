"""Doubles that replay answers to prompts seen before instead of computing them:
``integrity.caching`` (and the reference's judgement of controls,
``integrity.reference-decode``).

- ``CachedReplies``: replays a cached answer for a prompt seen before.
- ``ReplayCheapControls``: decodes each distinct prompt once and replays the answer for
  every repeat; a caching control (a prompt never seen, once the stream repeats) gets a
  cached answer of another prompt at once. Nothing judges a control's tokens.
- ``ReplaySlowNeighbour``: the same replay; controls are decoded honestly, and the repeat
  sent right after a control is slowed, since it is one of the two neighbours the control
  is compared with.
- ``ReplayShaped``: honest in the first pass of every trial (the only pass that holds
  controls), replaying in the later passes. It rebuilds the harness's clock from what it
  sees, so it knows where each pass and trial starts, and paces the replays so every
  trial has the same length and token count.

The last three were written against the checks as they once stood, and each got through
on the ``tiny`` challenge until the check it aimed at was changed;
``tests/engines/test_cheats.py`` keeps them REJECTED (or, for ``ReplayShaped``, with
nothing to replay). They print a ``CHEAT-STATS {json}`` line to stderr after each
generation request (tokens decoded by the model, tokens replayed), so a test reads from
the engine's log how much work it really did.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from doubles._shared import env_float, recorded, replay_steps
from engines.baseline.generation import Generation, TokenStep
from engines.baseline.model import BaselineEngine
from engines.baseline.protocol import SamplingParams


class CachedReplies(BaselineEngine):
    """Remembers every generated answer and replays it for a prompt seen before."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._cache: dict[tuple[int, ...], list[int]] = {}

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        key = (*prompt_ids, -1, sampling.max_tokens or 0)
        cached = self._cache.get(key)
        if cached is not None and prompt_logprobs is None:
            return Generation(prompt_ids, None, replay_steps(cached, len(cached)))
        gen = super().start(prompt_ids, sampling, prompt_logprobs)
        return recorded(gen, lambda out: self._cache.__setitem__(key, out))


@dataclass
class _Chat:
    """One generation request as the engine saw it (its own clock)."""

    key: tuple[int, ...]
    start: float
    end: float = 0.0
    gap: float = 0.0  # time since the previous timed request ended, when nothing came between

    @property
    def harness_s(self) -> float:
        """What this request adds to the harness's timed clock."""
        return self.gap + (self.end - self.start)


class ReplayShaped(BaselineEngine):
    """Honest in the first pass of every trial, replayed in the others, timed to agree."""

    #: seconds of margin kept on each side of the harness's trial-length threshold
    MARGIN_S = 0.12

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answers: dict[tuple[int, ...], list[int]] = {}
        self._chats: list[_Chat] = []
        self._cycle: int | None = None  # timed requests per pass
        self._single: float | None = None  # a trial is one pass: the paced length of one
        self._rest: list[float] = []  # seconds of each later pass of the current trial
        self._trial_pass = 0
        self._pass_pos = 0
        self._clock = 0.0  # the current trial's timed seconds, as the harness counts them
        self._pass_start = 0.0
        self._last_timed_end: float | None = None
        self._untimed_since = False
        self._min_trial_s = env_float("CHEAT_MIN_TRIAL_S", 2.0)
        self._pass_s = env_float("CHEAT_PASS_S", 0.08)
        self.stats = {"computed_tokens": 0, "replayed_tokens": 0, "controls": 0, "trials": 0}

    # -- the harness's clock, rebuilt ---------------------------------------------------

    def _gap(self, now: float) -> float:
        if self._untimed_since or self._last_timed_end is None:
            return 0.0
        return max(0.0, now - self._last_timed_end)

    def _plan(self, pass0_s: float) -> list[float]:
        """Lengths of the passes after a first pass of ``pass0_s``: short replayed passes
        while the trial stays clearly under the threshold, then one that ends it clearly
        over it."""
        low = self._min_trial_s - self.MARGIN_S
        passes, clock = [], pass0_s
        while clock + self._pass_s <= low:
            passes.append(self._pass_s)
            clock += self._pass_s
        passes.append(self._min_trial_s + self.MARGIN_S - clock)
        return passes

    def _first_repeat(self, key: tuple[int, ...]) -> None:
        first = next(i for i, c in enumerate(self._chats) if c.key == key)
        timed = self._chats[first:]
        self._cycle = len(timed)
        pass0 = sum(c.harness_s for c in timed)
        self._pass_pos = 0
        if pass0 >= self._min_trial_s - self.MARGIN_S:
            # one honest pass fills a trial, so the harness has ended trial 0 already; later
            # trials are one replayed pass each, a quarter shorter than the honest one
            self._single = max(self._min_trial_s + self.MARGIN_S, pass0 / 1.25)
            self._trial_pass, self._clock, self._pass_start = 0, 0.0, 0.0
            self.stats["trials"] = 1
        else:
            self._rest = self._plan(pass0)
            self._trial_pass, self._clock, self._pass_start = 1, pass0, pass0

    def _replaying(self) -> bool:
        return self._single is not None or self._trial_pass > 0

    def _target(self) -> float:
        assert self._cycle is not None
        length = self._single if self._single is not None else self._rest[self._trial_pass - 1]
        return self._pass_start + (self._pass_pos + 1) / self._cycle * length

    def _advance(self, chat: _Chat) -> None:
        """Count one timed request on the rebuilt clock; close passes and trials."""
        assert self._cycle is not None
        self._clock += chat.harness_s
        self._last_timed_end, self._untimed_since = chat.end, False
        self._pass_pos += 1
        if self._pass_pos < self._cycle:
            return
        self._pass_pos = 0
        self._pass_start = self._clock
        if self._single is None and self._trial_pass == 0:
            self._rest = self._plan(self._clock)
        self._trial_pass += 1
        if self._single is not None or self._trial_pass > len(self._rest):
            self._trial_pass, self._clock, self._pass_start = 0, 0.0, 0.0
            self.stats["trials"] += 1

    # -- requests ------------------------------------------------------------------------

    def _report(self) -> None:
        print("CHEAT-STATS " + json.dumps(self.stats, sort_keys=True), file=sys.stderr, flush=True)

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        now = time.perf_counter()
        if prompt_logprobs is not None:  # scoring: untimed, and always honest
            self._untimed_since = True
            return super().start(prompt_ids, sampling, prompt_logprobs)
        key = (*prompt_ids, -1, sampling.max_tokens or 0)
        chat = _Chat(key, now, gap=self._gap(now))
        answer = self._answers.get(key)
        if answer is not None and self._cycle is None:
            self._first_repeat(key)
        if answer is None:
            kind = "first" if self._cycle is None else "control"
            return self._honest(chat, prompt_ids, sampling, kind)
        if not self._replaying():  # the first pass of a trial: where the controls are
            return self._honest(chat, prompt_ids, sampling, "pass0")
        n = min(len(answer), sampling.max_tokens or len(answer))
        target = self._target()

        def pace() -> None:
            wait = target - (self._clock + self._gap(chat.start) + time.perf_counter() - chat.start)
            if wait > 0:
                time.sleep(wait)

        def steps() -> Iterator[TokenStep]:
            yield from replay_steps(answer, n, pace)
            chat.end = time.perf_counter()
            self._advance(chat)
            self.stats["replayed_tokens"] += n
            self._report()

        return Generation(list(prompt_ids), None, steps())

    def _honest(
        self, chat: _Chat, prompt_ids: list[int], sampling: SamplingParams, kind: str
    ) -> Generation:
        """Decode for real: the first pass ever (and warm-up), a trial's first pass, a control."""
        gen = super().start(prompt_ids, sampling, None)

        def done(out: list[int]) -> None:
            chat.end = time.perf_counter()
            self.stats["computed_tokens"] += len(out)
            if kind == "first":
                self._answers[chat.key] = out
                self._chats.append(chat)
                self._last_timed_end, self._untimed_since = chat.end, False
            elif kind == "pass0":
                self._advance(chat)
            else:  # a fresh prompt once the cycle is known: a caching control, untimed
                self.stats["controls"] += 1
                self._untimed_since = True
            self._report()

        return recorded(gen, done)


class _Replay(BaselineEngine):
    """Replays the answer to a prompt seen before in ``CHEAT_REPLAY_S`` (5 ms: a steady
    pace keeps the trials in agreement); subclasses choose what a control gets."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answers: dict[tuple[int, ...], list[int]] = {}
        self._repeated = False  # the timed stream has started to repeat its prompts
        self.stats = {"computed_tokens": 0, "replayed_tokens": 0, "controls": 0}

    def _report(self) -> None:
        print("CHEAT-STATS " + json.dumps(self.stats, sort_keys=True), file=sys.stderr, flush=True)

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        if prompt_logprobs is not None:
            return super().start(prompt_ids, sampling, prompt_logprobs)
        key = (*prompt_ids, -1, sampling.max_tokens or 0)
        answer = self._answers.get(key)
        n = sampling.max_tokens or 0
        if answer is not None:
            self._repeated = True
            return self._replayed(prompt_ids, answer[:n])
        if self._repeated:  # a prompt never seen once the stream repeats: a caching control
            self.stats["controls"] += 1
            return self.control(prompt_ids, sampling)
        gen = super().start(prompt_ids, sampling, None)

        def done(out: list[int]) -> None:
            self._answers[key] = out
            self.stats["computed_tokens"] += len(out)
            self._report()

        return recorded(gen, done)

    def _replayed(self, prompt_ids: list[int], answer: list[int]) -> Generation:
        until = time.perf_counter() + env_float("CHEAT_REPLAY_S", 0.005)

        def pace() -> None:
            self.before_replay_ends()
            wait = until - time.perf_counter()
            if wait > 0:
                time.sleep(wait)

        def steps() -> Iterator[TokenStep]:
            yield from replay_steps(answer, len(answer), pace)
            self.stats["replayed_tokens"] += len(answer)
            self._report()

        return Generation(list(prompt_ids), None, steps())

    def before_replay_ends(self) -> None:
        """Runs before the last token of a replayed answer; the default waits for nothing."""

    def control(self, prompt_ids: list[int], sampling: SamplingParams) -> Generation:
        return super().start(prompt_ids, sampling, None)


class ReplayCheapControls(_Replay):
    """Replays every repeat at once; a control gets the first cached answer, at once.

    The caching check compares controls with the repeats beside them, but nothing judges
    a control's tokens: an instant answer makes the controls look as fast as the repeats.
    """

    def control(self, prompt_ids: list[int], sampling: SamplingParams) -> Generation:
        answer = next(iter(self._answers.values()))
        return Generation(list(prompt_ids), None, replay_steps(answer, sampling.max_tokens or 0))


class ReplaySlowNeighbour(_Replay):
    """Replays every repeat at once, except the one sent right after a control, which
    takes ``CHEAT_SLOW`` (1.5) times an honest answer's time (the median of the first pass).

    A control is compared with the repeat answered before it (fast: the engine could not
    know a control was coming) and the one sent after it (the engine knows by then).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._honest_s: list[float] = []
        self._owed = 0.0  # seconds the next repeat must take
        self._until = 0.0

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        t0 = time.perf_counter()
        gen = super().start(prompt_ids, sampling, prompt_logprobs)
        if prompt_logprobs is not None or self._repeated:
            return gen
        inner = gen.steps

        def timed() -> Iterator[TokenStep]:
            yield from inner
            self._honest_s.append(time.perf_counter() - t0)

        gen.steps = timed()
        return gen

    def control(self, prompt_ids: list[int], sampling: SamplingParams) -> Generation:
        self._owed = env_float("CHEAT_SLOW", 1.5) * statistics.median(self._honest_s)
        return super().control(prompt_ids, sampling)

    def _replayed(self, prompt_ids: list[int], answer: list[int]) -> Generation:
        owed, self._owed = self._owed, 0.0
        self._until = time.perf_counter() + owed
        return super()._replayed(prompt_ids, answer)

    def before_replay_ends(self) -> None:
        wait = self._until - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
