"""Adversarial engines: small ``BaselineEngine`` subclasses that cheat or break.

They exist so the verifier's tests can prove each integrity check catches what it is
for. Each is selected in a container with ``ENGINE_CLASS=engines.adversarial:NAME``;
a few read a number from the environment (``ADVERSARY_AFTER``: how many generation
requests to serve honestly before misbehaving).

- ``InflatedUsage``: reports 3x the generated tokens in ``usage``
  (``tps.usage-mismatch``).
- ``PositiveLogprobs``: returns raw logits instead of logprobs (``ppl.logprob-positive``).
- ``SwitchPath``: decodes worse unless ``prompt_logprobs`` is asked (``integrity.same-path``).
- ``EarlyStop``: ends at half of ``max_tokens`` despite ``ignore_eos`` (``integrity.lengths``).
- ``Degraded``: noisy weights everywhere, so a higher PPL (``ppl.cap``).
- ``CachedReplies``: replays a cached answer for a prompt seen before (``integrity.caching``).
- ``Escape``: tries to reach the network and read held-out files; the sandbox stops it and
  the verdict is unaffected.
- ``Crash``: exits mid-run (verdict FAILED).
- ``Hang``: stops answering mid-run (verdict FAILED).

Cheats that know how they are judged, each answering the judge's own questions honestly
where it can (the verifier's proof is the timed work, judged by its own model):

- ``ScaledLogprobs``: every reported logprob times 0.85: all <= 0, every argmax
  unchanged, a PPL far better than the model's (``ppl.reference-mismatch``).
- ``ForgedChat``: cheap tokens for chat requests only; asked to score an answer it gave,
  it lists only that token, as the top, with rank 1; every other request is honest
  (``integrity.reference-decode``, ``integrity.same-path``).
- ``ForgedPromptReplay``: decodes the first chat prompt once, then answers every chat
  request with that answer and reports that prompt's ids (``tps.prompt-mismatch``,
  ``integrity.reference-decode``).
- ``GarbageTail``: honest first half of every chat answer, cheap second half
  (``integrity.reference-decode``).
- ``HonestUntilScored``: honest until the first scoring request (``prompt_logprobs``),
  cheap afterwards: the stage-order cheat (``integrity.reference-decode``).
- ``SometimesCheap``: one chat answer in ``ADVERSARY_EVERY`` (default 3) is cheap
  (``integrity.reference-decode``).
- ``ForgedPromptReplay`` with ``ADVERSARY_HONEST_IDS=1``: the same replay, reporting the
  ids of the prompt it was sent, so only the reference's judgement of the answer can
  catch it (``integrity.reference-decode``).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engines.baseline.model import (
    BaselineEngine,
    Generation,
    PositionLogprobs,
    TokenLogprob,
    TokenStep,
)
from engines.baseline.protocol import SamplingParams

if TYPE_CHECKING:
    import torch


def replay_steps(answer: list[int], n: int, before_last: Any = None) -> Iterator[TokenStep]:
    """``answer[:n]`` as generated steps, the last one finishing on length, computing
    nothing; ``before_last()`` runs before the last step (to pace a replay)."""
    for i, tok in enumerate(answer[:n]):
        if i + 1 == n and before_last is not None:
            before_last()
        yield TokenStep(tok, None, "length" if i + 1 == n else None)


def recorded(gen: Generation, done: Callable[[list[int]], None]) -> Generation:
    """``gen``, unchanged for its reader; ``done(ids)`` gets its answer once it is whole."""
    inner = gen.steps

    def steps() -> Iterator[TokenStep]:
        out: list[int] = []
        for step in inner:
            out.append(step.token_id)
            yield step
        done(out)

    gen.steps = steps()
    return gen


def _after() -> int:
    return int(os.environ.get("ADVERSARY_AFTER", "8"))


class InflatedUsage(BaselineEngine):
    def report_usage(self, prompt_ids: list[int], output_ids: list[int]) -> dict[str, int]:
        n = 3 * len(output_ids)
        return {
            "prompt_tokens": len(prompt_ids),
            "completion_tokens": n,
            "total_tokens": len(prompt_ids) + n,
        }


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


class SwitchPath(BaselineEngine):
    """Clean when scored, cheaper (and worse) when decoding: every 3rd token is the 2nd best."""

    def select_next_token(
        self, logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator, step: int
    ) -> int:
        import torch

        if sampling.greedy and step % 3 == 2:
            return int(torch.topk(logits, 2).indices[1].item())
        return super().select_next_token(logits, sampling, generator, step)


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


def _is_chat(engine: BaselineEngine, prompt_ids: list[int]) -> bool:
    """A prompt rendered by the chat template carries its turn marker; PPL records do not."""
    marker = engine.tokenizer.convert_tokens_to_ids("<start_of_turn>")
    return isinstance(marker, int) and marker in prompt_ids


def _second_best(logits: torch.Tensor) -> int:
    import torch

    return int(torch.topk(logits, 2).indices[1].item())


class _Cheap(BaselineEngine):
    """Shared hook: ``cheap(step)`` says whether this token of this answer is cheapened."""

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        self._cheat = prompt_logprobs is None and self.cheat_on(prompt_ids)
        return super().start(prompt_ids, sampling, prompt_logprobs)

    def cheat_on(self, prompt_ids: list[int]) -> bool:
        return _is_chat(self, prompt_ids)

    def cheap(self, step: int, max_tokens: int) -> bool:
        return step % 2 == 1

    def select_next_token(
        self, logits: torch.Tensor, sampling: SamplingParams, generator: torch.Generator, step: int
    ) -> int:
        if getattr(self, "_cheat", False) and self.cheap(step, sampling.max_tokens or 0):
            return _second_best(logits)
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
        if prompt_logprobs is not None or not _is_chat(self, prompt_ids):
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
        return self._scored and _is_chat(self, prompt_ids)


class SometimesCheap(_Cheap):
    """One chat answer in ``ADVERSARY_EVERY`` (3) is cheap; the others are honest."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._chats = 0

    def cheat_on(self, prompt_ids: list[int]) -> bool:
        if not _is_chat(self, prompt_ids):
            return False
        self._chats += 1
        return self._chats % int(os.environ.get("ADVERSARY_EVERY", "3")) == 0


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


def _attempts() -> dict[str, Any]:
    """Try to get out and to find held-out data; report every outcome."""
    out: dict[str, Any] = {"connect": {}, "dns": None, "files": {}}
    for host, port in (("1.1.1.1", 53), ("8.8.8.8", 443), ("172.17.0.1", 80)):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, port))
            out["connect"][f"{host}:{port}"] = "connected"
        except OSError as exc:
            out["connect"][f"{host}:{port}"] = f"{type(exc).__name__}: {exc}"[:120]
        finally:
            s.close()
    try:
        socket.getaddrinfo("huggingface.co", 443)
        out["dns"] = "resolved"
    except OSError as exc:
        out["dns"] = f"{type(exc).__name__}"
    candidates = [
        Path("/heldout"),
        Path("/data"),
        Path("/root"),
        Path("/home"),
        Path("/mnt"),
        Path("/srv"),
        Path("/host"),
    ]
    for extra in os.environ.get("ADVERSARY_PATHS", "").split(":"):
        if extra:
            candidates.append(Path(extra))
    found = []
    for base in candidates:
        if base.exists():
            found += [str(p) for p in base.rglob("*.jsonl")][:20]
        out["files"][str(base)] = base.exists()
    out["jsonl_found"] = found
    return out


class Escape(BaselineEngine):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        print("PODIUM-ATTEMPTS " + json.dumps(_attempts(), sort_keys=True), flush=True)


class _Countdown(BaselineEngine):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._served = 0
        self._lock = threading.Lock()

    def start(
        self, prompt_ids: list[int], sampling: SamplingParams, prompt_logprobs: int | None
    ) -> Generation:
        with self._lock:
            self._served += 1
            n = self._served
        if prompt_logprobs is None and n > _after():
            self.misbehave()
        return super().start(prompt_ids, sampling, prompt_logprobs)

    def misbehave(self) -> None:
        raise NotImplementedError


class Crash(_Countdown):
    def misbehave(self) -> None:
        print("adversary: crashing now", file=sys.stderr, flush=True)
        os._exit(17)


class Hang(_Countdown):
    def misbehave(self) -> None:
        print("adversary: hanging now", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
