"""Wait for vLLM to answer, then warm it with synthetic prompts (WARMUP_BRIDGE).

The first requests after start-up pay for CUDA-graph capture, autotuning and lazy
allocation. The warm-up sends its own generated text, never benchmark prompts: text
the benchmark will send must not sit in the prefix cache before timing starts (that is
what PRECACHE_BENCH did, and it is forbidden). Prompts alternate between the completions
endpoint (asking for prompt logprobs, the PPL stage's path) and the chat endpoint, so
every request path is exercised, and their lengths vary so more than one shape is
compiled; each is cut, with vLLM's own ``/tokenize``, to fit the
served ``max_model_len`` with its output. Standard library only (urllib).
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
) -> dict[str, Any] | None:
    """Poll ``/v1/models`` until it answers 200; return the first model's entry.

    The entry has the ``id`` and, for vLLM, the served ``max_model_len``. Returns None when
    ``keep_waiting`` turns false (the server died, a signal came) or ``timeout`` passes.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    while keep_waiting():
        try:
            status, body = _request(f"{base_url}/v1/models", None, timeout=5)
            if status == 200:
                data = json.loads(body).get("data") or [{}]
                entry = data[0] if isinstance(data[0], dict) else {}
                return {**entry, "id": str(entry.get("id", ""))}
        except (OSError, ValueError):
            pass
        if deadline is not None and time.monotonic() > deadline:
            return None
        time.sleep(interval)
    return None


def fit_prompt(base_url: str, model: str, prompt: str, budget: int) -> str:
    """``prompt`` cut to at most ``budget`` tokens as vLLM's ``/tokenize`` counts them.

    Words are dropped from the end; a server without ``/tokenize`` gets the prompt as is.
    """
    words = prompt.split(" ")
    for _ in range(4):
        text = " ".join(words)
        try:
            status, body = _request(
                f"{base_url}/tokenize", {"model": model, "prompt": text}, timeout=30
            )
            count = int(json.loads(body)["count"]) if status == 200 else None
        except (OSError, ValueError, KeyError, TypeError):
            count = None
        if count is None or count <= budget:
            return text
        words = words[: max(1, int(len(words) * budget / count * 0.9))]
    return " ".join(words)


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
    max_model_len: int | None = None,
    keep_going: Callable[[], bool] = lambda: True,
    timeout: float = 600.0,
) -> WarmupResult:
    """Send ``num_prompts`` synthetic prompts one at a time, greedy, ``max_tokens`` each.

    With ``max_model_len`` each prompt is cut to leave room for its output (and the chat
    template's few tokens).

    A failed warm-up request is logged and does not block readiness: the harness judges
    the engine itself, and a broken engine fails there with a clearer error.
    """
    start = time.monotonic()
    sent = succeeded = 0
    for i, prompt in enumerate(synthetic_prompts(num_prompts)):
        if not keep_going():
            break
        if max_model_len:
            prompt = fit_prompt(base_url, model, prompt, max(1, max_model_len - max_tokens - 32))
        common = {"model": model, "max_tokens": max_tokens, "temperature": 0.0, "ignore_eos": True}
        if i % 2 == 0:
            # prompt_logprobs: the scoring path compiles its own kernels on first use
            # (torch's inductor on a CPU), which must not land in a timed or scored request
            url = f"{base_url}/v1/completions"
            payload = {**common, "prompt": prompt, "prompt_logprobs": 1}
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
