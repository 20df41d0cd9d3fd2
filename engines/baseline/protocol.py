"""Request parsing: JSON bodies of the OpenAI-compatible API into typed, checked dataclasses.

Only the fields podium needs are read (``docs/engine-protocol.md``); unknown fields are
ignored, as vLLM ignores them. ``null`` means "not given". Types are checked strictly (a
boolean is not an integer, a string is not a number) because a verifier that sends the
wrong type should hear about it rather than get a silently different run. Checks that
need the model (vocabulary, context length) happen later, once the prompt is tokenised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from engines.baseline.errors import bad_request

#: vLLM's default ``--max-logprobs``: the largest ``logprobs`` / ``prompt_logprobs`` k.
DEFAULT_MAX_LOGPROBS = 20
_MISSING: Any = object()


@dataclass(frozen=True)
class SamplingDefaults:
    """Sampling values used when a request leaves them out (from the model's generation_config)."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0


@dataclass(frozen=True)
class SamplingParams:
    """How to pick each generated token. ``top_k`` 0 means no top-k cut.

    ``max_tokens`` is None when the request left it to the context length (chat only);
    ``logprobs`` is the number of alternatives to report per generated token (None: no
    logprobs at all, 0: only the chosen token's).
    """

    max_tokens: int | None
    temperature: float
    top_p: float
    top_k: int
    seed: int | None
    ignore_eos: bool
    min_tokens: int
    stop_token_ids: tuple[int, ...]
    logprobs: int | None
    #: Stop strings: generation ends once the generated text contains one; the text is cut
    #: before it (vLLM's default, ``include_stop_str_in_output`` false).
    stop: tuple[str, ...] = ()

    @property
    def greedy(self) -> bool:
        return self.temperature < 1e-5


Prompt = str | tuple[int, ...]


@dataclass(frozen=True)
class CompletionRequest:
    """``POST /v1/completions``. Each of ``prompts`` is text, or token ids used exactly as
    given; a list of prompts (a batch) gets one choice per prompt, as vLLM answers it."""

    model: str | None
    prompts: tuple[Prompt, ...]
    add_special_tokens: bool
    sampling: SamplingParams
    echo: bool
    prompt_logprobs: int | None
    return_token_ids: bool
    return_tokens_as_token_ids: bool
    stream: bool
    include_usage: bool


@dataclass(frozen=True)
class ChatRequest:
    """``POST /v1/chat/completions``; ``messages`` are rendered with the model's chat template."""

    model: str | None
    messages: tuple[dict[str, str], ...]
    add_generation_prompt: bool
    sampling: SamplingParams
    return_token_ids: bool
    stream: bool
    include_usage: bool


# -- field readers ---------------------------------------------------------------------


def _get(body: dict[str, Any], name: str) -> Any:
    value = body.get(name, _MISSING)
    return _MISSING if value is None else value


def _bool(body: dict[str, Any], name: str, default: bool) -> bool:
    value = _get(body, name)
    if value is _MISSING:
        return default
    if not isinstance(value, bool):
        raise bad_request(f"'{name}' must be a boolean, got {type(value).__name__}", name)
    return value


def _int(body: dict[str, Any], name: str, *, minimum: int | None = None) -> int | None:
    value = _get(body, name)
    if value is _MISSING:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(f"'{name}' must be an integer, got {type(value).__name__}", name)
    if minimum is not None and value < minimum:
        raise bad_request(f"'{name}' must be at least {minimum}, got {value}", name)
    return value


def _float(body: dict[str, Any], name: str, default: float) -> float:
    value = _get(body, name)
    if value is _MISSING:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad_request(f"'{name}' must be a number, got {type(value).__name__}", name)
    if not math.isfinite(value):
        raise bad_request(f"'{name}' must be finite", name)
    return float(value)


def _logprob_count(body: dict[str, Any], name: str, max_logprobs: int) -> int | None:
    value = _int(body, name, minimum=0)
    if value is not None and value > max_logprobs:
        raise bad_request(f"'{name}' is {value}; at most {max_logprobs} is allowed", name)
    return value


def _token_ids(value: list[Any], name: str) -> tuple[int, ...]:
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int):
            raise bad_request(f"'{name}' must be a string or a list of integer token ids", name)
    return tuple(value)


def _stream_options(body: dict[str, Any], stream: bool) -> bool:
    options = _get(body, "stream_options")
    if options is _MISSING:
        return False
    if not isinstance(options, dict):
        raise bad_request("'stream_options' must be an object", "stream_options")
    if not stream:
        raise bad_request("'stream_options' is only allowed with 'stream': true", "stream_options")
    return _bool(options, "include_usage", False)


def _common(body: dict[str, Any]) -> str | None:
    if not isinstance(body, dict):
        raise bad_request("the request body must be a JSON object")
    n = _int(body, "n", minimum=1)
    if n is not None and n != 1:
        raise bad_request("only 'n': 1 is supported", "n")
    model = _get(body, "model")
    if model is not _MISSING and not isinstance(model, str):
        raise bad_request("'model' must be a string", "model")
    return None if model is _MISSING else model


def _sampling(
    body: dict[str, Any],
    defaults: SamplingDefaults,
    *,
    max_tokens: int | None,
    logprobs: int | None,
) -> SamplingParams:
    temperature = _float(body, "temperature", defaults.temperature)
    if temperature < 0:
        raise bad_request("'temperature' must be at least 0", "temperature")
    top_p = _float(body, "top_p", defaults.top_p)
    if not 0 < top_p <= 1:
        raise bad_request("'top_p' must be in (0, 1]", "top_p")
    top_k = _int(body, "top_k")
    if top_k is None:
        top_k = defaults.top_k
    elif top_k < -1:
        raise bad_request("'top_k' must be -1 or 0 (no cut) or at least 1", "top_k")
    stop = _get(body, "stop")
    if stop is _MISSING:
        stop = []
    if isinstance(stop, str):
        stop = [stop]
    if not isinstance(stop, list) or not all(isinstance(x, str) for x in stop):
        raise bad_request("'stop' must be a string or a list of strings", "stop")
    stop_ids = _get(body, "stop_token_ids")
    if stop_ids is _MISSING:
        stop_ids = []
    if not isinstance(stop_ids, list):
        raise bad_request("'stop_token_ids' must be a list of integers", "stop_token_ids")
    return SamplingParams(
        max_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        top_k=max(top_k, 0),
        seed=_int(body, "seed"),
        ignore_eos=_bool(body, "ignore_eos", False),
        min_tokens=_int(body, "min_tokens", minimum=0) or 0,
        stop_token_ids=_token_ids(stop_ids, "stop_token_ids"),
        logprobs=logprobs,
        stop=tuple(x for x in stop if x),
    )


# -- requests --------------------------------------------------------------------------


def parse_completion(
    body: Any, defaults: SamplingDefaults, max_logprobs: int = DEFAULT_MAX_LOGPROBS
) -> CompletionRequest:
    """Check and type a ``/v1/completions`` body (raises ``ApiError`` 400)."""
    model = _common(body)
    prompts = _prompts(_get(body, "prompt"))
    echo = _bool(body, "echo", False)
    max_tokens = _int(body, "max_tokens", minimum=0)
    if max_tokens is None:
        max_tokens = 16  # the OpenAI and vLLM default for completions
    if max_tokens == 0 and not echo:
        raise bad_request("'max_tokens' must be at least 1 (0 only with 'echo')", "max_tokens")
    stream = _bool(body, "stream", False)
    prompt_logprobs = _logprob_count(body, "prompt_logprobs", max_logprobs)
    if prompt_logprobs is not None and stream:
        raise bad_request("'prompt_logprobs' cannot be combined with streaming", "prompt_logprobs")
    if stream and len(prompts) > 1:
        raise bad_request(
            "streaming answers one prompt at a time; send a batch unstreamed", "prompt"
        )
    return CompletionRequest(
        model=model,
        prompts=prompts,
        add_special_tokens=_bool(body, "add_special_tokens", True),
        sampling=_sampling(
            body,
            defaults,
            max_tokens=max_tokens,
            logprobs=_logprob_count(body, "logprobs", max_logprobs),
        ),
        echo=echo,
        prompt_logprobs=prompt_logprobs,
        return_token_ids=_bool(body, "return_token_ids", False),
        return_tokens_as_token_ids=_bool(body, "return_tokens_as_token_ids", False),
        stream=stream,
        include_usage=_stream_options(body, stream),
    )


def _prompts(prompt: Any) -> tuple[Prompt, ...]:
    """vLLM's four prompt forms: text, token ids, a list of texts, a list of id lists."""
    if prompt is _MISSING:
        raise bad_request("'prompt' is required", "prompt")
    if isinstance(prompt, str):
        batch: list[Any] = [prompt]
    elif isinstance(prompt, list) and prompt and all(isinstance(p, str | list) for p in prompt):
        batch = prompt
    elif isinstance(prompt, list):
        batch = [prompt]
    else:
        raise bad_request(
            "'prompt' must be a string, a list of token ids, or a list of either", "prompt"
        )
    out: list[Prompt] = []
    for item in batch:
        parsed: Prompt = item if isinstance(item, str) else _token_ids(item, "prompt")
        if len(parsed) == 0:
            raise bad_request("'prompt' must not be empty", "prompt")
        out.append(parsed)
    return tuple(out)


def _message(item: Any, index: int) -> dict[str, str]:
    where = f"messages[{index}]"
    if not isinstance(item, dict):
        raise bad_request(f"'{where}' must be an object", "messages")
    role = item.get("role")
    if not isinstance(role, str) or not role:
        raise bad_request(f"'{where}.role' must be a non-empty string", "messages")
    content = item.get("content")
    if content is None:
        content = ""
    if isinstance(content, list):  # OpenAI content parts: only text parts are served
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise bad_request(f"'{where}.content' may only hold text parts", "messages")
            text = part.get("text")
            if not isinstance(text, str):
                raise bad_request(f"'{where}.content' text parts need a string 'text'", "messages")
            texts.append(text)
        content = "\n".join(texts)
    if not isinstance(content, str):
        raise bad_request(f"'{where}.content' must be a string or a list of parts", "messages")
    return {"role": role, "content": content}


def parse_chat(
    body: Any, defaults: SamplingDefaults, max_logprobs: int = DEFAULT_MAX_LOGPROBS
) -> ChatRequest:
    """Check and type a ``/v1/chat/completions`` body (raises ``ApiError`` 400)."""
    model = _common(body)
    messages = _get(body, "messages")
    if not isinstance(messages, list) or not messages:
        raise bad_request("'messages' must be a non-empty list", "messages")
    max_tokens = _int(body, "max_completion_tokens", minimum=1)
    if max_tokens is None:
        max_tokens = _int(body, "max_tokens", minimum=1)
    top_logprobs = _logprob_count(body, "top_logprobs", max_logprobs)
    want_logprobs = _bool(body, "logprobs", False)
    if top_logprobs is not None and not want_logprobs:
        raise bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs")
    stream = _bool(body, "stream", False)
    return ChatRequest(
        model=model,
        messages=tuple(_message(item, i) for i, item in enumerate(messages)),
        add_generation_prompt=_bool(body, "add_generation_prompt", True),
        sampling=_sampling(
            body,
            defaults,
            max_tokens=max_tokens,
            logprobs=(top_logprobs or 0) if want_logprobs else None,
        ),
        return_token_ids=_bool(body, "return_token_ids", False),
        stream=stream,
        include_usage=_stream_options(body, stream),
    )
