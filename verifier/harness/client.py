"""The harness's only way to reach an engine: HTTP, through one async httpx client.

The harness never knows how the engine was started; it gets a base URL and speaks
vLLM's OpenAI-compatible subset (``docs/engine-protocol.md``). Every transport failure,
timeout and non-2xx answer is translated into ``EngineError`` / ``EngineTimeout`` in one
place, ``engine_error``, naming the request kind and an excerpt of what came back.

Each request runs under a total deadline (``asyncio.timeout``) on top of httpx's
per-read timeout, so an engine that drips bytes cannot hold a request open forever.
``trust_env=False``: proxy variables of the verifier's machine must never reroute the
engine's traffic.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from podium.errors import EngineError, EngineTimeout

_EXCERPT = 300


def engine_error(
    kind: str,
    *,
    exc: BaseException | None = None,
    response: httpx.Response | None = None,
    body_text: str | None = None,
    timeout_s: float | None = None,
    detail: str | None = None,
) -> EngineError:
    """The one translation of an HTTP failure into podium's error hierarchy."""
    if isinstance(exc, httpx.TimeoutException | TimeoutError):
        limit = f" within {timeout_s:g} s" if timeout_s is not None else ""
        return EngineTimeout(
            f"{kind}: the engine did not answer{limit}",
            hint="the engine is hung or far slower than the challenge allows",
            where=kind,
        )
    if response is not None:
        text = body_text if body_text is not None else _safe_text(response)
        excerpt = " ".join(text.split())[:_EXCERPT]
        return EngineError(
            f"{kind}: HTTP {response.status_code} from {response.request.url.path}: {excerpt}",
            hint="read the engine's log for the cause",
            where=kind,
        )
    if isinstance(exc, httpx.ConnectError | httpx.RemoteProtocolError | httpx.ReadError):
        return EngineError(
            f"{kind}: the engine closed or refused the connection ({type(exc).__name__}: {exc})",
            hint="the engine probably crashed; read its log",
            where=kind,
        )
    if exc is not None:
        return EngineError(f"{kind}: {type(exc).__name__}: {exc}", where=kind)
    return EngineError(f"{kind}: {detail or 'malformed answer'}", where=kind)


def _safe_text(response: httpx.Response) -> str:
    try:
        return response.text
    except (httpx.ResponseNotRead, UnicodeDecodeError):
        return "<unreadable body>"


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
    choice = choices[0]
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
        pool = max(1, concurrency) + 2
        transport = httpx.AsyncHTTPTransport(
            http1=True,
            http2=False,
            retries=0,
            trust_env=False,
            limits=httpx.Limits(max_connections=pool, max_keepalive_connections=pool),
            # headers and body go out as separate writes: without NODELAY, Nagle's
            # algorithm meets the server's delayed ACK and stalls requests by ~40 ms
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
        )
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            transport=transport,
            trust_env=False,
            timeout=httpx.Timeout(self.timeout_s, connect=min(connect_timeout_s, self.timeout_s)),
        )

    async def __aenter__(self) -> EngineClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def get_json(self, path: str, kind: str, *, timeout_s: float | None = None) -> Any:
        limit = timeout_s if timeout_s is not None else self.timeout_s
        try:
            async with asyncio.timeout(limit):
                response = await self._http.get(path, timeout=limit)
        except (httpx.HTTPError, TimeoutError) as exc:
            raise engine_error(kind, exc=exc, timeout_s=limit) from exc
        return self._json(response, kind)

    def _json(self, response: httpx.Response, kind: str) -> Any:
        if not response.is_success:
            raise engine_error(kind, response=response)
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise engine_error(kind, detail=f"the answer is not JSON ({exc})") from exc

    async def post(
        self, path: str, body: dict[str, Any], kind: str, *, timeout_s: float | None = None
    ) -> Reply:
        """POST a completions or chat body; streamed answers are joined into one ``Reply``."""
        limit = timeout_s if timeout_s is not None else self.timeout_s
        start = time.perf_counter()
        try:
            async with asyncio.timeout(limit):
                if body.get("stream"):
                    acc = _StreamAccumulator(kind)
                    async for chunk in self._sse(path, body, kind):
                        acc.add(chunk)
                    return acc.reply(time.perf_counter() - start)
                response = await self._http.post(path, json=body)
                payload = self._json(response, kind)
        except (httpx.HTTPError, TimeoutError) as exc:
            raise engine_error(kind, exc=exc, timeout_s=limit) from exc
        return parse_reply(payload, kind, time.perf_counter() - start)

    async def _sse(self, path: str, body: dict[str, Any], kind: str) -> AsyncIterator[Any]:
        async with self._http.stream("POST", path, json=body) as response:
            if not response.is_success:
                text = (await response.aread()).decode("utf-8", "replace")
                raise engine_error(kind, response=response, body_text=text)
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    return
                try:
                    yield json.loads(data)
                except json.JSONDecodeError as exc:
                    raise engine_error(
                        kind, detail=f"a stream chunk is not JSON: {data[:80]}"
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
                response = await self._http.get("/health", timeout=probe)
                if response.is_success:
                    return await self.served_model()
                last = f"/health answered HTTP {response.status_code}"
            except httpx.HTTPError as exc:
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
