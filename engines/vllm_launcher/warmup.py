"""Wait for vLLM to answer, then warm it with synthetic prompts (WARMUP_BRIDGE).

The first requests after start-up pay for CUDA-graph capture, autotuning and lazy
allocation. The warm-up sends its own generated text, never benchmark prompts: text
the benchmark will send must not sit in the prefix cache before timing starts (that is
what PRECACHE_BENCH did, and it is forbidden). Prompts alternate between the completions
and chat endpoints so both request paths are exercised, and their lengths vary so more
than one prefill shape is compiled. Standard library only (urllib).
"""

from __future__ import annotations

import json
import random
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

# Plain words for synthetic prompts: no benchmark text, no special tokens.
# fmt: off
_WORDS = (
    "river", "stone", "garden", "window", "morning", "paper", "engine", "signal", "quiet",
    "orange", "bridge", "cloud", "valley", "number", "letter", "market", "forest", "summer",
    "winter", "candle", "silver", "harbor", "island", "mountain", "station", "lantern",
    "meadow", "copper", "thunder", "village", "compass", "journey", "pattern", "measure",
    "kitchen", "library", "pencil", "ladder", "mirror", "basket", "feather", "granite",
    "marble", "velvet", "anchor", "beacon", "canyon", "desert", "glacier", "horizon", "jungle",
    "lagoon", "orchard", "prairie", "quarry", "reef", "savanna", "tundra", "volcano",
)
# fmt: on


def synthetic_prompts(count: int, *, seed: int = 0) -> list[str]:
    """``count`` deterministic prompts of 8 to about 400 words of generated text."""
    rng = random.Random(seed)
    prompts = []
    for i in range(count):
        length = 8 + (i * 97) % 393
        words = " ".join(rng.choice(_WORDS) for _ in range(length))
        prompts.append(f"Continue this list of words: {words}")
    return prompts


def _request(url: str, payload: Any | None, timeout: float) -> tuple[int, bytes]:
    data = None if payload is None else json.dumps(payload).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"} if data else {}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def wait_for_models(
    base_url: str,
    *,
    keep_waiting: Callable[[], bool],
    interval: float = 0.5,
    timeout: float | None = None,
) -> str | None:
    """Poll ``/v1/models`` until it answers 200; return the first model id.

    Returns None when ``keep_waiting`` turns false (the server died, a signal came) or
    ``timeout`` passes.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while keep_waiting():
        try:
            status, body = _request(f"{base_url}/v1/models", None, timeout=5)
            if status == 200:
                data = json.loads(body).get("data") or [{}]
                return str(data[0].get("id", ""))
        except (OSError, ValueError):
            pass
        if deadline is not None and time.monotonic() > deadline:
            return None
        time.sleep(interval)
    return None


@dataclass(frozen=True)
class WarmupResult:
    sent: int
    succeeded: int
    seconds: float


def run_warmup(
    base_url: str,
    model: str,
    *,
    num_prompts: int,
    max_tokens: int,
    keep_going: Callable[[], bool] = lambda: True,
    timeout: float = 600.0,
) -> WarmupResult:
    """Send ``num_prompts`` synthetic prompts one at a time, greedy, ``max_tokens`` each.

    A failed warm-up request is logged and does not block readiness: the harness judges
    the engine itself, and a broken engine fails there with a clearer error.
    """
    start = time.monotonic()
    sent = succeeded = 0
    for i, prompt in enumerate(synthetic_prompts(num_prompts)):
        if not keep_going():
            break
        common = {"model": model, "max_tokens": max_tokens, "temperature": 0.0, "ignore_eos": True}
        if i % 2 == 0:
            url, payload = f"{base_url}/v1/completions", {**common, "prompt": prompt}
        else:
            messages = [{"role": "user", "content": prompt}]
            url, payload = f"{base_url}/v1/chat/completions", {**common, "messages": messages}
        sent += 1
        try:
            status, body = _request(url, payload, timeout)
        except OSError as exc:
            sys.stderr.write(f"[launcher] warm-up request {i} failed: {exc}\n")
            continue
        if status == 200:
            succeeded += 1
        else:
            sys.stderr.write(f"[launcher] warm-up request {i} answered {status}: {body[:200]!r}\n")
    return WarmupResult(sent=sent, succeeded=succeeded, seconds=time.monotonic() - start)
