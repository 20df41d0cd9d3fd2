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
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
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
                    noise = torch.randn(p.shape, generator=g) * p.detach().float().std() * scale
                    p.add_(noise.to(p.dtype).to(p.device))


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

            def replay() -> Iterator[TokenStep]:
                for i, tok in enumerate(cached):
                    yield TokenStep(tok, None, "length" if i + 1 == len(cached) else None)

            return Generation(prompt_ids, None, replay())
        gen = super().start(prompt_ids, sampling, prompt_logprobs)
        inner = gen.steps

        def record() -> Iterator[TokenStep]:
            out: list[int] = []
            for step in inner:
                out.append(step.token_id)
                yield step
            self._cache[key] = out

        gen.steps = record()
        return gen


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
