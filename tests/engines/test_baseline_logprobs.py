"""Teacher-forced logprobs over HTTP equal a direct transformers forward pass.

The server scores prompts in chunks of 16 positions through the KV cache; the reference
here runs the whole sequence at once, so agreement also proves the chunking is exact.
"""

from __future__ import annotations

import math
import random
from typing import Any

import httpx
import pytest


@pytest.fixture(scope="module")
def prompt_ids() -> list[int]:
    rng = random.Random(7)
    return [2] + [rng.randrange(6, 2048) for _ in range(70)]  # longer than the sliding window


def _direct_logprobs(model: Any, ids: list[int]) -> Any:
    import torch

    with torch.inference_mode():
        logits = model(torch.tensor([ids])).logits[0].float()
    return torch.log_softmax(logits, dim=-1)


def _post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(url + "/v1/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def test_prompt_logprobs_match_a_direct_forward_pass(
    engine_server: Any, reference_model: Any, prompt_ids: list[int]
) -> None:
    body = {
        "prompt": prompt_ids,
        "max_tokens": 1,
        "temperature": 0,
        "prompt_logprobs": 3,
        "add_special_tokens": False,
    }
    result = _post(engine_server.url, body)
    entries = result["choices"][0]["prompt_logprobs"]
    assert len(entries) == len(prompt_ids)
    assert entries[0] is None
    reference = _direct_logprobs(reference_model, prompt_ids)
    for pos in range(1, len(prompt_ids)):
        row = reference[pos - 1]
        entry = entries[pos]
        actual = entry[str(prompt_ids[pos])]
        assert actual["logprob"] == pytest.approx(float(row[prompt_ids[pos]]), abs=1e-4)
        assert actual["rank"] == int((row > row[prompt_ids[pos]]).sum()) + 1
        top_ids = row.topk(3).indices.tolist()
        assert {str(i) for i in top_ids} <= set(entry)
        assert len(entry) in (3, 4)
        for token_id, item in entry.items():
            assert item["logprob"] <= 0
            assert item["logprob"] == pytest.approx(float(row[int(token_id)]), abs=1e-4)
            assert isinstance(item["decoded_token"], str)
    assert result["usage"]["prompt_tokens"] == len(prompt_ids)


def test_echo_logprobs_match_a_direct_forward_pass(
    engine_server: Any, reference_model: Any, prompt_ids: list[int]
) -> None:
    body = {
        "prompt": prompt_ids[:40],
        "max_tokens": 2,
        "temperature": 0,
        "ignore_eos": True,
        "echo": True,
        "logprobs": 1,
        "return_token_ids": True,
        "return_tokens_as_token_ids": True,
    }
    choice = _post(engine_server.url, body)["choices"][0]
    full = prompt_ids[:40] + choice["token_ids"]
    logprobs = choice["logprobs"]
    assert logprobs["tokens"] == [f"token_id:{i}" for i in full]
    assert logprobs["token_logprobs"][0] is None
    assert logprobs["top_logprobs"][0] is None
    reference = _direct_logprobs(reference_model, full)
    for pos in range(1, len(full)):
        expected = float(reference[pos - 1][full[pos]])
        assert logprobs["token_logprobs"][pos] == pytest.approx(expected, abs=1e-4)
        top = logprobs["top_logprobs"][pos]
        best = int(reference[pos - 1].argmax())
        assert top[f"token_id:{best}"] == pytest.approx(float(reference[pos - 1][best]), abs=1e-4)
        assert len(top) in (1, 2)
    # Greedy: each generated token is the argmax of the row before it.
    for offset, token in enumerate(choice["token_ids"]):
        assert token == int(reference[40 + offset - 1].argmax())
    assert logprobs["text_offset"] == sorted(logprobs["text_offset"])


def test_echo_with_zero_max_tokens_scores_only_the_prompt(
    engine_server: Any, prompt_ids: list[int]
) -> None:
    body = {"prompt": prompt_ids[:20], "max_tokens": 0, "echo": True, "logprobs": 0}
    result = _post(engine_server.url, body)
    choice = result["choices"][0]
    assert len(choice["logprobs"]["token_logprobs"]) == 20
    assert all(lp <= 0 for lp in choice["logprobs"]["token_logprobs"][1:])
    assert result["usage"]["completion_tokens"] == 0
    assert choice["finish_reason"] == "length"


def test_ppl_style_request_gives_a_finite_perplexity(
    engine_server: Any, prompt_ids: list[int]
) -> None:
    """The harness's PPL request shape: context + target ids, one token, k = 1."""
    body = {
        "prompt": prompt_ids,
        "max_tokens": 1,
        "temperature": 0,
        "prompt_logprobs": 1,
        "add_special_tokens": False,
    }
    entries = _post(engine_server.url, body)["choices"][0]["prompt_logprobs"]
    targets = prompt_ids[50:]
    nll = -sum(entries[50 + i][str(t)]["logprob"] for i, t in enumerate(targets))
    ppl = math.exp(nll / len(targets))
    assert 1.0 < ppl < 1e6


def test_chat_logprobs_shape(engine_server: Any) -> None:
    body = {
        "messages": [{"role": "user", "content": "kato"}],
        "max_tokens": 3,
        "temperature": 0,
        "ignore_eos": True,
        "logprobs": True,
        "top_logprobs": 2,
    }
    response = httpx.post(engine_server.url + "/v1/chat/completions", json=body, timeout=60)
    content = response.json()["choices"][0]["logprobs"]["content"]
    assert len(content) == 3
    for item in content:
        assert item["logprob"] <= 0
        assert len(item["top_logprobs"]) == 2
        assert item["top_logprobs"][0]["logprob"] >= item["logprob"] - 1e-6
        assert bytes(item["bytes"]).decode("utf-8", "replace") == item["token"]


def test_several_prompts_are_scored_as_one_batch_exactly_as_one_by_one(
    engine_server: Any, reference_model: Any
) -> None:
    """The reference phase sends its scoring requests several prompts at a time: the padded
    batch (chunked through the KV cache) gives every prompt what a direct forward pass of
    that prompt alone gives, and one choice per prompt, in order."""
    rng = random.Random(11)
    prompts = [[2] + [rng.randrange(6, 2048) for _ in range(n)] for n in (70, 5, 33, 1)]
    body = {
        "prompt": prompts,
        "max_tokens": 1,
        "temperature": 0,
        "prompt_logprobs": 1,
        "add_special_tokens": False,
        "return_token_ids": True,
    }
    result = _post(engine_server.url, body)
    assert [c["index"] for c in result["choices"]] == [0, 1, 2, 3]
    for ids, choice in zip(prompts, result["choices"], strict=True):
        assert choice["prompt_token_ids"] == ids
        entries = choice["prompt_logprobs"]
        assert len(entries) == len(ids) and entries[0] is None
        reference = _direct_logprobs(reference_model, ids)
        for pos in range(1, len(ids)):
            actual = entries[pos][str(ids[pos])]
            assert actual["logprob"] == pytest.approx(float(reference[pos - 1][ids[pos]]), abs=1e-4)
        assert choice["token_ids"] == [int(reference[-1].argmax())]  # the greedy next token
    assert result["usage"]["prompt_tokens"] == sum(len(p) for p in prompts)
