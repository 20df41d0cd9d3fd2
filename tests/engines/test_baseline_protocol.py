"""The baseline engine speaks the OpenAI-compatible protocol to real clients and refuses bad input.

Every refusal must be a 4xx JSON error in OpenAI's shape, never a 500 or an HTML page,
and the server must keep serving afterwards.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest


@pytest.fixture()
def client(engine_server: Any) -> Any:
    with httpx.Client(base_url=engine_server.url, timeout=60) as c:
        yield c


def _assert_error(response: httpx.Response, status: int, param: str | None = None) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["code"] == status
    assert error["message"]
    if param is not None:
        assert error["param"] == param


def test_openai_client_text_completion(engine_server: Any, served_name: str) -> None:
    openai = pytest.importorskip("openai")
    api = openai.OpenAI(base_url=engine_server.url + "/v1", api_key="unused", max_retries=0)
    result = api.completions.create(
        model=served_name,
        prompt="kato mi",
        max_tokens=6,
        temperature=0,
        extra_body={"ignore_eos": True},
    )
    choice = result.choices[0]
    assert choice.finish_reason == "length"
    assert result.usage is not None and result.usage.completion_tokens == 6
    assert isinstance(choice.text, str)


def test_openai_client_chat_completion(engine_server: Any, served_name: str) -> None:
    openai = pytest.importorskip("openai")
    api = openai.OpenAI(base_url=engine_server.url + "/v1", api_key="unused", max_retries=0)
    result = api.chat.completions.create(
        model=served_name,
        messages=[{"role": "user", "content": "renmi sula"}],
        max_tokens=5,
        temperature=0,
        top_p=1,
        extra_body={"ignore_eos": True, "return_token_ids": True, "top_k": -1},
    )
    choice = result.choices[0]
    assert choice.message.role == "assistant"
    assert len(choice.model_extra["token_ids"]) == 5
    assert result.usage is not None and result.usage.completion_tokens == 5
    models = api.models.list()
    assert [m.id for m in models.data] == [served_name]


def test_health_and_models(client: httpx.Client, served_name: str) -> None:
    assert client.get("/health").status_code == 200
    listing = client.get("/v1/models").json()
    assert listing["object"] == "list"
    assert listing["data"][0]["id"] == served_name
    assert listing["data"][0]["max_model_len"] == 512


def test_keep_alive_reuses_one_connection(engine_server: Any) -> None:
    host, port = engine_server.url.removeprefix("http://").split(":")
    body = json.dumps({"prompt": [2, 40, 41], "max_tokens": 2, "temperature": 0}).encode()
    request = (
        f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        stream = sock.makefile("rb")
        for _ in range(2):
            sock.sendall(request)
            assert stream.readline().startswith(b"HTTP/1.1 200")
            length = 0
            while (line := stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            assert json.loads(stream.read(length))["usage"]["completion_tokens"] >= 1


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": 3}, "prompt"),
        ({"prompt": ""}, "prompt"),
        ({"prompt": []}, "prompt"),
        ({"prompt": [2, "x"]}, "prompt"),
        ({"prompt": [2, True]}, "prompt"),
        ({"prompt": [2, 99999]}, "prompt"),
        ({"prompt": [2, -1]}, "prompt"),
        ({"prompt": ["a", "b"], "stream": True}, "prompt"),
        ({"prompt": [[2, 3], "b", [2, "x"]]}, "prompt"),
        ({"max_tokens": 4}, "prompt"),
        ({"prompt": "x", "max_tokens": "4"}, "max_tokens"),
        ({"prompt": "x", "max_tokens": 0}, "max_tokens"),
        ({"prompt": "x", "max_tokens": 100_000}, "max_tokens"),
        ({"prompt": [2] * 500, "max_tokens": 13}, "max_tokens"),
        ({"prompt": "x", "temperature": "hot"}, "temperature"),
        ({"prompt": "x", "temperature": -1}, "temperature"),
        ({"prompt": "x", "top_p": 0}, "top_p"),
        ({"prompt": "x", "top_k": -5}, "top_k"),
        ({"prompt": "x", "ignore_eos": "yes"}, "ignore_eos"),
        ({"prompt": "x", "n": 2}, "n"),
        ({"prompt": "x", "logprobs": 21}, "logprobs"),
        ({"prompt": "x", "prompt_logprobs": -1}, "prompt_logprobs"),
        ({"prompt": "x", "prompt_logprobs": 1, "stream": True}, "prompt_logprobs"),
        ({"prompt": "x", "stream_options": {"include_usage": True}}, "stream_options"),
        ({"prompt": "x", "stop": 3}, "stop"),
        ({"prompt": "x", "stop": [".", 3]}, "stop"),
        ({"prompt": "x", "stop_token_ids": [5000]}, "stop_token_ids"),
        ({"prompt": "x", "model": 7}, "model"),
    ],
)
def test_bad_completion_requests_get_400(
    client: httpx.Client, body: dict[str, Any], param: str
) -> None:
    _assert_error(client.post("/v1/completions", json=body), 400, param)


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"messages": []}, "messages"),
        ({"messages": "hi"}, "messages"),
        ({"messages": [{"content": "hi"}]}, "messages"),
        ({"messages": [{"role": "user", "content": 5}]}, "messages"),
        ({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}, "messages"),
        ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, "max_tokens"),
        ({"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}, "top_logprobs"),
    ],
)
def test_bad_chat_requests_get_400(client: httpx.Client, body: dict[str, Any], param: str) -> None:
    _assert_error(client.post("/v1/chat/completions", json=body), 400, param)


def test_invalid_json_and_non_object_bodies(client: httpx.Client) -> None:
    headers = {"content-type": "application/json"}
    for raw in (b"{", b"\xff\xfe", b"[1, 2]", b"null", b'"prompt"'):
        _assert_error(client.post("/v1/completions", content=raw, headers=headers), 400)


def test_unknown_model_is_404_as_in_vllm(client: httpx.Client) -> None:
    body = {"model": "someone-else", "prompt": "x", "max_tokens": 1}
    _assert_error(client.post("/v1/completions", json=body), 404, "model")


def test_unknown_path_and_wrong_method(client: httpx.Client) -> None:
    _assert_error(client.get("/v1/nothing"), 404)
    _assert_error(client.post("/v2/completions", json={"prompt": "x"}), 404)
    wrong = client.get("/v1/completions")
    _assert_error(wrong, 405)
    assert wrong.headers["allow"] == "POST"
    _assert_error(client.delete("/v1/models"), 405)


def test_body_over_the_cap_is_413(engine_server: Any) -> None:
    from engines.baseline.server import EngineServer

    small = EngineServer(engine_server.api, port=0, max_body_bytes=1024).start()
    try:
        body = {"prompt": [2] * 2000, "max_tokens": 1}
        _assert_error(httpx.post(small.url + "/v1/completions", json=body, timeout=30), 413)
    finally:
        small.stop()


def test_unknown_fields_are_ignored(client: httpx.Client) -> None:
    body = {
        "prompt": [2, 30, 31],
        "max_tokens": 3,
        "temperature": 0,
        "ignore_eos": True,
        "frequency_penalty": 0,
        "user": "someone",
        "some_future_field": {"nested": [1, 2]},
    }
    response = client.post("/v1/completions", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["usage"]["completion_tokens"] == 3


def test_good_request_still_works_after_bad_ones(client: httpx.Client) -> None:
    for raw in (b"{", b'{"prompt": []}', b'{"prompt": [1e9]}'):
        client.post("/v1/completions", content=raw, headers={"content-type": "application/json"})
    client.get("/missing")
    response = client.post(
        "/v1/completions",
        json={"prompt": "kato", "max_tokens": 4, "temperature": 0, "ignore_eos": True},
    )
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["finish_reason"] == "length"
