"""Generation over HTTP: greedy identity, exact counts, streaming, seeds and failures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest


def _complete(url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(url + "/v1/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _events(url: str, path: str, body: dict[str, Any]) -> list[Any]:
    events: list[Any] = []
    with httpx.stream("POST", url + path, json=body, timeout=60) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        for line in response.iter_lines():
            if line.startswith("data: "):
                payload = line.removeprefix("data: ")
                events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def test_greedy_token_ids_equal_transformers_generate(
    engine_server: Any, reference_model: Any, tokenizer: Any
) -> None:
    import torch

    prompt = "kato mi rensu la bodev quazen"
    body = {"prompt": prompt, "max_tokens": 24, "temperature": 0, "return_token_ids": True}
    choice = _complete(engine_server.url, body)["choices"][0]
    prompt_ids = [tokenizer.bos_token_id, *tokenizer.encode(prompt, add_special_tokens=False)]
    assert choice["prompt_token_ids"] == prompt_ids
    with torch.inference_mode():
        expected = reference_model.generate(
            torch.tensor([prompt_ids]), do_sample=False, max_new_tokens=24
        )[0, len(prompt_ids) :].tolist()
    assert choice["token_ids"] == expected[: len(choice["token_ids"])]
    assert len(choice["token_ids"]) == len(expected) or choice["finish_reason"] == "stop"


def test_ignore_eos_gives_exactly_max_tokens(engine_server: Any, tokenizer: Any) -> None:
    eos = tokenizer.eos_token_id
    body = {
        "prompt": [2, 40, 41, 42],
        "max_tokens": 40,
        "temperature": 1.0,
        "seed": 3,
        "ignore_eos": True,
        "return_token_ids": True,
    }
    result = _complete(engine_server.url, body)
    choice = result["choices"][0]
    assert len(choice["token_ids"]) == 40
    assert choice["finish_reason"] == "length"
    assert result["usage"] == {"prompt_tokens": 4, "completion_tokens": 40, "total_tokens": 44}
    stopping = _complete(engine_server.url, {**body, "ignore_eos": False})["choices"][0]
    ids = stopping["token_ids"]
    assert eos not in ids[:-1]
    assert (stopping["finish_reason"] == "stop") == (ids[-1] == eos or len(ids) < 40)


def test_stop_token_ends_generation_and_is_counted(engine_server: Any) -> None:
    first = _complete(
        engine_server.url,
        {
            "prompt": [2, 50, 51],
            "max_tokens": 5,
            "temperature": 0,
            "ignore_eos": True,
            "return_token_ids": True,
        },
    )["choices"][0]["token_ids"]
    stopper = first[2]
    cut = first.index(stopper)
    result = _complete(
        engine_server.url,
        {
            "prompt": [2, 50, 51],
            "max_tokens": 5,
            "temperature": 0,
            "ignore_eos": True,
            "stop_token_ids": [stopper],
            "return_token_ids": True,
        },
    )
    choice = result["choices"][0]
    assert choice["token_ids"] == first[: cut + 1]
    assert choice["finish_reason"] == "stop"
    assert choice["stop_reason"] == stopper
    assert result["usage"]["completion_tokens"] == cut + 1


def test_min_tokens_holds_back_stop_tokens(engine_server: Any) -> None:
    first = _complete(
        engine_server.url,
        {"prompt": [2, 60], "max_tokens": 1, "temperature": 0, "return_token_ids": True},
    )["choices"][0]["token_ids"][0]
    body = {
        "prompt": [2, 60],
        "max_tokens": 3,
        "min_tokens": 2,
        "temperature": 0,
        "stop_token_ids": [first],
        "return_token_ids": True,
    }
    ids = _complete(engine_server.url, body)["choices"][0]["token_ids"]
    assert first not in ids[:2]


def test_streaming_sends_one_chunk_per_token_and_the_same_tokens(engine_server: Any) -> None:
    body = {
        "prompt": "sula bodev",
        "max_tokens": 12,
        "temperature": 0,
        "ignore_eos": True,
        "return_token_ids": True,
    }
    plain = _complete(engine_server.url, body)["choices"][0]
    events = _events(
        engine_server.url,
        "/v1/completions",
        {**body, "stream": True, "stream_options": {"include_usage": True}},
    )
    assert events[-1] == "[DONE]"
    usage_event = events[-2]
    chunks = events[:-2]
    assert usage_event["choices"] == []
    assert usage_event["usage"]["completion_tokens"] == 12
    assert len(chunks) == 12
    assert [c["choices"][0]["token_ids"][0] for c in chunks] == plain["token_ids"]
    assert chunks[0]["choices"][0]["prompt_token_ids"] == plain["prompt_token_ids"]
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None] * 11 + ["length"]
    assert "".join(c["choices"][0]["text"] for c in chunks) == plain["text"]


def test_chat_streaming_matches_non_streaming(engine_server: Any) -> None:
    body = {
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "kato?"},
        ],
        "max_completion_tokens": 8,
        "temperature": 0,
        "ignore_eos": True,
        "return_token_ids": True,
    }
    plain = httpx.post(engine_server.url + "/v1/chat/completions", json=body, timeout=60).json()
    events = _events(engine_server.url, "/v1/chat/completions", {**body, "stream": True})
    assert events[-1] == "[DONE]"
    opening, *tokens = events[:-1]
    assert opening["choices"][0]["delta"]["role"] == "assistant"
    assert opening["prompt_token_ids"] == plain["prompt_token_ids"]
    assert [t["choices"][0]["token_ids"][0] for t in tokens] == plain["choices"][0]["token_ids"]
    assert len(tokens) == 8
    content = "".join(t["choices"][0]["delta"]["content"] for t in tokens)
    assert content == plain["choices"][0]["message"]["content"]


def test_seeded_sampling_is_reproducible(engine_server: Any) -> None:
    body = {
        "prompt": [2, 70, 71],
        "max_tokens": 16,
        "temperature": 0.9,
        "top_p": 0.9,
        "top_k": 50,
        "seed": 11,
        "ignore_eos": True,
        "return_token_ids": True,
    }
    runs = [_complete(engine_server.url, body)["choices"][0]["token_ids"] for _ in range(2)]
    other = _complete(engine_server.url, {**body, "seed": 12})["choices"][0]["token_ids"]
    assert runs[0] == runs[1]
    assert other != runs[0]


@pytest.fixture(scope="module")
def failing_server(tiny_model_dir: Path) -> Iterator[Any]:
    """A variant whose token choice raises on a marked prompt: the hook path of subclasses."""
    from engines.baseline import BaselineEngine, start_server

    class Exploding(BaselineEngine):
        def select_next_token(self, logits: Any, sampling: Any, generator: Any, step: int) -> int:
            if sampling.seed == 666 and step == 2:
                raise RuntimeError("boom")
            return super().select_next_token(logits, sampling, generator, step)

    server = start_server(tiny_model_dir, max_model_len=256, engine_class=Exploding)
    yield server
    server.stop()


def test_a_crash_in_generation_is_a_json_500_and_serving_goes_on(failing_server: Any) -> None:
    body = {"prompt": [2, 9, 10], "max_tokens": 5, "temperature": 0, "ignore_eos": True}
    crashed = httpx.post(
        failing_server.url + "/v1/completions", json={**body, "seed": 666}, timeout=60
    )
    assert crashed.status_code == 500
    assert crashed.json()["error"]["code"] == 500
    assert "Traceback" not in crashed.text
    events = _events(failing_server.url, "/v1/completions", {**body, "seed": 666, "stream": True})
    assert "error" in events[-2] and events[-1] == "[DONE]"
    ok = httpx.post(failing_server.url + "/v1/completions", json=body, timeout=60)
    assert ok.status_code == 200
    assert ok.json()["usage"]["completion_tokens"] == 5


def test_a_dropped_stream_frees_the_engine(engine_server: Any) -> None:
    body = {
        "prompt": [2, 80],
        "max_tokens": 200,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
    }
    with httpx.stream("POST", engine_server.url + "/v1/completions", json=body, timeout=60) as r:
        next(r.iter_lines())  # read one event, then hang up
    follow = _complete(engine_server.url, {"prompt": [2, 81], "max_tokens": 2, "temperature": 0})
    assert follow["usage"]["completion_tokens"] >= 1
