"""The harness's only way to reach an engine: HTTP/1.1, through ``wire.Wire`` (h11).

The harness never knows how the engine was started; it gets a base URL and speaks
vLLM's OpenAI-compatible subset (``docs/engine-protocol.md``). Every transport failure,
malformed answer, timeout and non-2xx answer is translated into ``EngineError`` /
``EngineTimeout`` in one place, ``engine_error``, naming the request kind and describing
what came back (status, exception type, size) in podium's words; what the engine itself
sent rides along as ``engine_text``, for the organizer's log only.

Each request runs under a total deadline (``asyncio.timeout``), so an engine that drips
bytes cannot hold a request open forever. The wire writes each request in one piece and
parses answers with h11; ``docs/benchmarks.md`` (section 1) measures its cost per request
side by side with httpx. It reads no proxy variables: the verifier's machine must never
reroute the engine's traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from podium.errors import EngineError, EngineTimeout, UsageError
from verifier.harness.wire import ProtocolError, Response, Wire

#: how much of what the engine sent an error keeps for the organizer's log
_ENGINE_TEXT = 1 << 16
_DRAIN_S = 0.05  # longest wait for a stream's end after 'data: [DONE]'
# what a transport failure can raise: refused or reset (OSError), an answer h11 refused
# (ProtocolError: malformed, oversized or cut short), or no answer in time
TRANSPORT_ERRORS = (OSError, ProtocolError, TimeoutError)


def _size(text: str) -> str:
    n = len(text.encode("utf-8", "replace"))
    return f"{n} byte{'' if n == 1 else 's'}"


def engine_error(
    kind: str,
    *,
    exc: BaseException | None = None,
    response: Response | None = None,
    body_text: str | None = None,
    timeout_s: float | None = None,
    detail: str | None = None,
    sent: str | None = None,
) -> EngineError:
    """The one translation of an HTTP failure into podium's error hierarchy.

    The message holds podium's own words only: the request kind, a status code, an
    exception type, a byte count. Whatever the engine sent (an error body, an answer h11
    or JSON refused, ``sent``) is the error's ``engine_text``, for the organizer's log:
    it may carry the held-out text the engine was given, so it never reaches the report.
    """
    if isinstance(exc, TimeoutError):
        limit = f" within {timeout_s:g} s" if timeout_s is not None else ""
        return EngineTimeout(
            f"the engine did not answer{limit}",
            hint="the engine is hung or far slower than the challenge allows",
            where=kind,
        )
    if response is not None:
        text = body_text if body_text is not None else response.text
        return EngineError(
            f"HTTP {response.status} from {response.path} (a body of {_size(text)}, "
            "kept in the organizer's log)",
            hint="read the engine's log for the cause",
            where=kind,
            engine_text=text[:_ENGINE_TEXT],
        )
    if isinstance(exc, ProtocolError):
        return EngineError(
            f"the engine's answer is not well-formed HTTP/1.1 ({exc.summary})",
            hint="the engine sent a malformed or truncated answer; read its log",
            where=kind,
            engine_text=str(exc)[:_ENGINE_TEXT],
        )
    if isinstance(exc, OSError):
        return EngineError(
            f"the engine closed or refused the connection ({type(exc).__name__})",
            hint="the engine probably crashed; read its log",
            where=kind,
            engine_text=str(exc)[:_ENGINE_TEXT],
        )
    if exc is not None:
        return EngineError(
            type(exc).__name__, where=kind, engine_text=str(exc)[:_ENGINE_TEXT] or None
        )
    sent_note = f" ({_size(sent)})" if sent is not None else ""
    return EngineError(
        f"{detail or 'malformed answer'}{sent_note}",
        where=kind,
        engine_text=sent[:_ENGINE_TEXT] if sent is not None else None,
    )


@dataclass
class Reply:
    """One completion or chat answer, normalised; ``None`` means the engine did not say."""

    text: str
    token_ids: list[int] | None
    prompt_token_ids: list[int] | None
    prompt_logprobs: list[dict[str, Any] | None] | None
    finish_reason: str | None
    usage: dict[str, Any] | None
    latency_s: float


def _ids(value: Any, kind: str, name: str) -> list[int] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise engine_error(kind, detail=f"'{name}' is not a list of integer token ids")
    return value


def parse_reply(body: Any, kind: str, latency_s: float) -> Reply:
    """Read a non-streamed completions or chat body; a wrong shape is an ``EngineError``."""
    if not isinstance(body, dict):
        raise engine_error(kind, detail="the answer is not a JSON object")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise engine_error(kind, detail="the answer has no choices")
    return _choice_reply(body, choices[0], kind, latency_s)


def parse_replies(body: Any, kind: str, latency_s: float, n: int) -> list[Reply]:
    """Read the ``n`` choices of a completions body sent ``n`` prompts, in prompt order
    (by each choice's ``index``); a missing, repeated or extra one is an ``EngineError``."""
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        raise engine_error(kind, detail="the answer has no choices")
    by_index: dict[int, Any] = {}
    for choice in body["choices"]:
        index = choice.get("index") if isinstance(choice, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or index in by_index:
            raise engine_error(kind, detail="a choice has a missing or repeated 'index'")
        by_index[index] = choice
    if sorted(by_index) != list(range(n)):
        raise engine_error(kind, detail=f"{len(by_index)} choices for {n} prompts")
    return [_choice_reply(body, by_index[i], kind, latency_s) for i in range(n)]


def _choice_reply(
    body: dict[str, Any], choice: dict[str, Any], kind: str, latency_s: float
) -> Reply:
    message = choice.get("message")
    text = message.get("content") if isinstance(message, dict) else choice.get("text")
    prompt_ids = choice.get("prompt_token_ids", body.get("prompt_token_ids"))
    prompt_logprobs = choice.get("prompt_logprobs")
    if prompt_logprobs is not None and not isinstance(prompt_logprobs, list):
        raise engine_error(kind, detail="'prompt_logprobs' is not a list")
    usage = body.get("usage")
    return Reply(
        text=text if isinstance(text, str) else "",
        token_ids=_ids(choice.get("token_ids"), kind, "token_ids"),
        prompt_token_ids=_ids(prompt_ids, kind, "prompt_token_ids"),
        prompt_logprobs=prompt_logprobs,
        finish_reason=choice.get("finish_reason"),
        usage=usage if isinstance(usage, dict) else None,
        latency_s=latency_s,
    )


class _StreamAccumulator:
    """Joins server-sent chunks into one ``Reply`` (vLLM chunk shapes, both endpoints)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.text: list[str] = []
        self.token_ids: list[int] | None = None
        self.prompt_token_ids: list[int] | None = None
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None

    def add(self, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            raise engine_error(self.kind, detail="a stream chunk is not a JSON object")
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        top_prompt = _ids(chunk.get("prompt_token_ids"), self.kind, "prompt_token_ids")
        if top_prompt is not None:
            self.prompt_token_ids = top_prompt
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            piece = delta.get("content") if isinstance(delta, dict) else choice.get("text")
            if isinstance(piece, str):
                self.text.append(piece)
            ids = _ids(choice.get("token_ids"), self.kind, "token_ids")
            if ids is not None:
                self.token_ids = (self.token_ids or []) + ids
            prompt_ids = _ids(choice.get("prompt_token_ids"), self.kind, "prompt_token_ids")
            if prompt_ids is not None:
                self.prompt_token_ids = prompt_ids
            if choice.get("finish_reason") is not None:
                self.finish_reason = choice["finish_reason"]

    def reply(self, latency_s: float) -> Reply:
        return Reply(
            text="".join(self.text),
            token_ids=self.token_ids,
            prompt_token_ids=self.prompt_token_ids,
            prompt_logprobs=None,
            finish_reason=self.finish_reason,
            usage=self.usage,
            latency_s=latency_s,
        )


class EngineClient:
    """An async client for one engine; use as ``async with EngineClient(url, ...) as c``.

    ``concurrency`` sizes the connection pool so that every in-flight request has its own
    kept-alive HTTP/1.1 connection and none waits for the pool inside the timed region.
    """

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float,
        concurrency: int = 1,
        connect_timeout_s: float = 10.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout_s = float(timeout_s)
        self._wire = Wire(
            self.base_url,
            pool=max(1, concurrency) + 2,
            connect_timeout_s=min(connect_timeout_s, self.timeout_s),
        )

    async def __aenter__(self) -> EngineClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._wire.aclose()

    async def get_json(self, path: str, kind: str, *, timeout_s: float | None = None) -> Any:
        limit = timeout_s if timeout_s is not None else self.timeout_s
        try:
            response = await self._wire.request("GET", path, timeout_s=limit)
        except TRANSPORT_ERRORS as exc:
            raise engine_error(kind, exc=exc, timeout_s=limit) from exc
        return self._json(response, kind)

    def _json(self, response: Response, kind: str) -> Any:
        if not response.ok:
            raise engine_error(kind, response=response)
        try:
            return json.loads(response.body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise engine_error(
                kind,
                detail=f"the answer is not JSON ({type(exc).__name__})",
                sent=response.text,
            ) from exc

    async def post(
        self, path: str, body: dict[str, Any], kind: str, *, timeout_s: float | None = None
    ) -> Reply:
        """POST a completions or chat body; streamed answers are joined into one ``Reply``."""
        limit = timeout_s if timeout_s is not None else self.timeout_s
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        start = time.perf_counter()
        try:
            if body.get("stream"):
                acc = _StreamAccumulator(kind)
                async with asyncio.timeout(limit):
                    async for chunk in self._sse(path, data, kind):
                        acc.add(chunk)
                return acc.reply(time.perf_counter() - start)
            response = await self._wire.request("POST", path, data, timeout_s=limit)
        except TRANSPORT_ERRORS as exc:
            raise engine_error(kind, exc=exc, timeout_s=limit) from exc
        payload = self._json(response, kind)
        return parse_reply(payload, kind, time.perf_counter() - start)

    async def post_many(
        self, path: str, body: dict[str, Any], kind: str, *, timeout_s: float | None = None
    ) -> list[Reply]:
        """POST a completions body whose ``prompt`` is a list of token-id prompts; one
        ``Reply`` per prompt, in order. Not streamed."""
        prompts = body.get("prompt")
        if body.get("stream") or not isinstance(prompts, list) or not prompts:
            raise UsageError("post_many sends a non-streamed body with a list of prompts")
        limit = timeout_s if timeout_s is not None else self.timeout_s
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        start = time.perf_counter()
        try:
            response = await self._wire.request("POST", path, data, timeout_s=limit)
        except TRANSPORT_ERRORS as exc:
            raise engine_error(kind, exc=exc, timeout_s=limit) from exc
        payload = self._json(response, kind)
        return parse_replies(payload, kind, time.perf_counter() - start, len(prompts))

    async def _sse(self, path: str, data: bytes, kind: str) -> AsyncIterator[Any]:
        async with self._wire.stream("POST", path, data) as stream:
            if not 200 <= stream.status < 300:
                text = (await stream.read()).decode("utf-8", "replace")
                raise engine_error(
                    kind,
                    response=Response(stream.status, stream.headers, b"", stream.path),
                    body_text=text,
                )
            async for line in stream.lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    # the body's end follows at once from any sane server; reading it
                    # keeps the connection for the next request, waiting for it is bounded
                    with contextlib.suppress(*TRANSPORT_ERRORS):
                        async with asyncio.timeout(_DRAIN_S):
                            await stream.read()
                    return
                try:
                    yield json.loads(payload)
                except json.JSONDecodeError as exc:
                    raise engine_error(
                        kind, detail="a stream chunk is not JSON", sent=payload
                    ) from exc
            raise engine_error(kind, detail="the stream ended without 'data: [DONE]'")

    async def complete(self, body: dict[str, Any], *, kind: str = "completion") -> Reply:
        return await self.post("/v1/completions", body, kind)

    async def chat(self, body: dict[str, Any], *, kind: str = "chat completion") -> Reply:
        return await self.post("/v1/chat/completions", body, kind)

    async def served_model(self) -> str:
        """The first model id of ``/v1/models``: the name every request must carry."""
        doc = await self.get_json("/v1/models", "list models")
        data = doc.get("data") if isinstance(doc, dict) else None
        if not isinstance(data, list) or not data or not isinstance(data[0], dict):
            raise engine_error("list models", detail="/v1/models lists no model")
        model = data[0].get("id")
        if not isinstance(model, str) or not model:
            raise engine_error("list models", detail="/v1/models has a model without an id")
        return model

    async def wait_ready(
        self,
        timeout_s: float,
        *,
        is_alive: Callable[[], bool] | None = None,
        poll_s: float = 0.5,
    ) -> str:
        """Poll ``/health`` then ``/v1/models`` until both answer; return the served model.

        Connection refusals are expected while the engine starts and are retried; a dead
        engine process (``is_alive()`` false) fails at once instead of at the deadline.
        """
        deadline = time.monotonic() + timeout_s
        last = "no answer yet"
        while True:
            if is_alive is not None and not is_alive():
                raise EngineError(
                    f"the engine exited before it became ready (last: {last})",
                    hint="read the engine's log for the cause",
                    where="wait ready",
                )
            left = deadline - time.monotonic()
            if left <= 0:
                raise EngineTimeout(
                    f"the engine was not ready within {timeout_s:g} s (last: {last})",
                    hint="the engine start-up is slower than the challenge allows, or it hangs",
                    where="wait ready",
                )
            probe = min(max(left, 0.1), 10.0)
            try:
                response = await self._wire.request("GET", "/health", timeout_s=probe)
                if response.ok:
                    return await self.served_model()
                last = f"/health answered HTTP {response.status}"
            except TRANSPORT_ERRORS as exc:
                last = f"{type(exc).__name__}"
            except EngineError as exc:
                last = exc.message
            await asyncio.sleep(min(poll_s, max(deadline - time.monotonic(), 0)))


async def wait_ready(
    base_url: str, timeout_s: float, is_alive: Callable[[], bool] | None = None
) -> str:
    """Wait until the engine at ``base_url`` is ready; return its served model id."""
    async with EngineClient(base_url, timeout_s=timeout_s) as client:
        return await client.wait_ready(timeout_s, is_alive=is_alive)


async def served_model(base_url: str, timeout_s: float = 30.0) -> str:
    async with EngineClient(base_url, timeout_s=timeout_s) as client:
        return await client.served_model()
