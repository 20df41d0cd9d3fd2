"""The HTTP client reaches engines, and every way an engine can fail becomes EngineError.

A real HTTP server (the fake engine) stands in for the engine; crashes and hangs are
real closed connections and real silences, not patched functions.
"""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from doubles.fake_engine import MODEL_ID, FakeEngine, Misbehave

from podium.errors import EngineError, EngineTimeout
from verifier.harness.client import EngineClient, served_model, wait_ready

BODY = {
    "model": MODEL_ID,
    "prompt": [2, 5, 9],
    "max_tokens": 6,
    "temperature": 0.0,
    "return_token_ids": True,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_wait_ready_returns_the_served_model() -> None:
    with FakeEngine() as engine:
        assert asyncio.run(wait_ready(engine.url, 5.0)) == MODEL_ID
        assert asyncio.run(served_model(engine.url)) == MODEL_ID


@pytest.mark.serial
def test_wait_ready_fails_fast_when_the_engine_process_died() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    start = time.monotonic()
    with pytest.raises(EngineError, match="exited before it became ready") as info:
        asyncio.run(wait_ready(url, 30.0, is_alive=lambda: False))
    assert not isinstance(info.value, EngineTimeout)
    assert time.monotonic() - start < 2.0


def test_wait_ready_times_out_when_nothing_listens() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(EngineTimeout, match="not ready within 1 s"):
        asyncio.run(wait_ready(url, 1.0, is_alive=lambda: True))


async def _post(url: str, body: dict[str, object], timeout_s: float = 5.0) -> object:
    async with EngineClient(url, timeout_s=timeout_s) as client:
        return await client.complete(body, kind="probe")


def test_a_non_2xx_answer_names_the_request_kind_and_status_once() -> None:
    """The message is podium's words (kind, status, size); the body is the organizer's."""

    async def go(url: str) -> None:
        async with EngineClient(url, timeout_s=5.0) as client:
            await client.post("/v1/nowhere", BODY, "probe request")

    with FakeEngine() as engine, pytest.raises(EngineError) as info:
        asyncio.run(go(engine.url))
    assert str(info.value).startswith("probe request: HTTP 404 from /v1/nowhere (a body of ")
    assert str(info.value).count("probe request") == 1
    assert "not found" not in str(info.value)
    assert info.value.engine_text is not None and "not found" in info.value.engine_text


def test_a_dropped_connection_is_an_engine_error() -> None:
    with FakeEngine(bad=Misbehave(crash_after=0)) as engine, pytest.raises(EngineError) as info:
        asyncio.run(_post(engine.url, BODY))
    assert not isinstance(info.value, EngineTimeout)
    assert "probe" in str(info.value)


@pytest.mark.serial
def test_a_hung_engine_times_out_within_the_request_timeout() -> None:
    with FakeEngine(bad=Misbehave(hang=True)) as engine:
        start = time.monotonic()
        with pytest.raises(EngineTimeout, match=r"did not answer within 0\.5 s"):
            asyncio.run(_post(engine.url, BODY, timeout_s=0.5))
        assert time.monotonic() - start < 2.0


def test_streamed_and_plain_answers_read_the_same() -> None:
    with FakeEngine() as engine:
        plain = asyncio.run(_post(engine.url, BODY))
        streamed = asyncio.run(
            _post(engine.url, {**BODY, "stream": True, "stream_options": {"include_usage": True}})
        )
    for field in ("text", "token_ids", "prompt_token_ids", "finish_reason", "usage"):
        assert getattr(streamed, field) == getattr(plain, field), field
    assert plain.token_ids and len(plain.token_ids) == 6  # type: ignore[attr-defined]


def test_streamed_answers_keep_their_connection_for_the_next_request() -> None:
    body = {**BODY, "stream": True}

    async def go(url: str) -> int:
        async with EngineClient(url, timeout_s=5.0) as client:
            for _ in range(3):
                await client.complete(body)
            return len(client._wire._idle)

    with FakeEngine() as engine:
        assert asyncio.run(go(engine.url)) == 1


def test_chat_prompt_ids_are_read_from_the_top_level() -> None:
    body = {
        "model": MODEL_ID,
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 3,
        "temperature": 0.0,
        "return_token_ids": True,
    }

    async def go(url: str) -> object:
        async with EngineClient(url, timeout_s=5.0) as client:
            return await client.chat(body)

    with FakeEngine() as engine:
        reply = asyncio.run(go(engine.url))
    assert reply.prompt_token_ids == [2, ord("h") % 64, ord("i") % 64]  # type: ignore[attr-defined]
    assert len(reply.token_ids) == 3  # type: ignore[attr-defined]
